package docker

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// gvisorFacts reads a runsc sandbox's namespaces from the host. The agent's
// own processes and namespaces exist only inside gVisor's kernel; what the
// host runs for the container, and what an escape would land in, are
// runsc's processes in the container's cgroup:
//   - the sentry (`runsc-sandbox … boot … ID`, the pid the daemon names):
//     gVisor's kernel, the boundary. "outside.ns.*".
//   - its children, the stubs in which the agent's instructions run under
//     systrap: expected in the sentry's namespaces, listed in
//     "outside.stubs"; one that is not is judged on its own as
//     "outside.stub-PID.ns.*".
//   - the gofer (`runsc-gofer … gofer … ID`), which serves the sandbox's
//     files: "outside.gofer.ns.*".
//   - anything else in the cgroup, judged too ("outside.other-PID.ns.*"):
//     an unknown host process of the sandbox is not waved through.
//
// Each comes with "role", "pid" and "cmdline" facts; what could not be read
// gives an "error" fact, so the gate is INCONCLUSIVE rather than PASS.
// `runsc exec` processes are not in the cgroup (they live beside it, under
// containerd's shim) and are not part of the sandbox.
func gvisorFacts(sentry int, id string, f map[string]string) {
	if sentry <= 0 {
		f["outside.ns.error"] = "the daemon names no process for the gVisor sandbox"
		return
	}
	// Pinned, and checked through the pin: the daemon named this pid a
	// moment ago, and it may have exited since.
	sp, err := pinIn(sentry, id)
	if err != nil {
		f["outside.ns.error"] = err.Error()
		return
	}
	defer sp.Close()
	if argv, _ := sp.Cmdline(); !runscRole(argv, "boot", id) {
		f["outside.ns.error"] = fmt.Sprintf("pid %d, which the daemon names, is not a runsc sandbox for this container: %q", sentry, capped(strings.Join(argv, " ")))
		return
	}
	argv, _ := sp.Cmdline()
	describe(f, "outside.", "gVisor sentry", sentry, argv)
	hostUserFacts(sp, "gVisor's sentry (the agent's uid exists only in gVisor's kernel)", f)
	sentryNS := map[string]string{}
	if readPinned(sp, "", sentryNS) == 0 {
		f["outside.ns.error"] = fmt.Sprintf("could not read /proc/%d/ns", sentry)
		return
	}
	for k, v := range sentryNS {
		f["outside.ns."+k] = v
	}
	procs := cgroupProcs(id)
	var stubs []string
	gofers := 0
	for _, pid := range slices.Sorted(maps.Keys(procs)) {
		if pid == sentry {
			continue
		}
		argv := cmdline(pid)
		switch {
		case descends(pid, sentry, procs):
			ns := map[string]string{}
			if readNS(pid, "", ns) == 0 {
				continue // gone: stubs come and go with the agent's processes
			}
			if maps.Equal(ns, sentryNS) {
				stubs = append(stubs, strconv.Itoa(pid))
				continue
			}
			name := fmt.Sprintf("stub-%d", pid)
			describe(f, "outside."+name+".", "gVisor sentry child (stub) in namespaces of its own", pid, argv)
			readNS(pid, "outside."+name+".ns.", f)
		case runscRole(argv, "gofer", id):
			name := "gofer"
			if gofers++; gofers > 1 {
				name = fmt.Sprintf("gofer-%d", pid)
			}
			describe(f, "outside."+name+".", "gVisor gofer", pid, argv)
			if readNS(pid, "outside."+name+".ns.", f) == 0 {
				f["outside."+name+".error"] = fmt.Sprintf("could not read /proc/%d/ns", pid)
			}
		default:
			name := fmt.Sprintf("other-%d", pid)
			describe(f, "outside."+name+".", "unknown process in the gVisor sandbox's cgroup", pid, argv)
			if readNS(pid, "outside."+name+".ns.", f) == 0 && alive(pid) {
				f["outside."+name+".error"] = fmt.Sprintf("could not read /proc/%d/ns", pid)
			}
		}
	}
	if gofers == 0 {
		f["outside.gofer.error"] = "no runsc gofer for this container found in its cgroup"
	}
	f["outside.stubs"] = "pids " + strings.Join(stubs, " ") + ": the sentry's children (where the agent's instructions run), in the sentry's namespaces"
	if len(stubs) == 0 {
		f["outside.stubs"] = "none found beside the sentry"
	}
}

// runscRole: argv is runsc's for this verb ("boot": the sentry, "gofer")
// and this container (runsc puts the container id last).
func runscRole(argv []string, verb, id string) bool {
	return len(argv) > 2 && argv[len(argv)-1] == id && slices.Contains(argv[1:len(argv)-1], verb)
}

func describe(f map[string]string, prefix, role string, pid int, argv []string) {
	f[prefix+"role"] = role
	f[prefix+"pid"] = strconv.Itoa(pid)
	f[prefix+"cmdline"] = shortArgv(argv)
}

// shortArgv drops runsc's descriptor-number flags (noise for a reader),
// keeping the verb, the runtime flags and the container id.
func shortArgv(argv []string) string {
	var keep []string
	for _, a := range argv {
		name, _, _ := strings.Cut(a, "=")
		if strings.HasSuffix(name, "-fd") || strings.HasSuffix(name, "-fds") {
			continue
		}
		keep = append(keep, a)
	}
	s := strings.Join(keep, " ")
	if len(s) > 1024 {
		s = s[:1024]
	}
	return s
}

func cmdline(pid int) []string {
	if pid <= 0 {
		return nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// cgroupProcs maps every process in the container's cgroup to its parent.
func cgroupProcs(id string) map[int]int {
	out := map[int]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || inCgroupOf(pid, id) != nil {
			continue
		}
		if pp := parentOf(pid); pp > 0 {
			out[pid] = pp
		}
	}
	return out
}

// parentOf reads the ppid from /proc/PID/stat, after the command name
// (which may itself hold spaces and parentheses).
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 2 {
		return 0
	}
	pp, _ := strconv.Atoi(fields[1])
	return pp
}

// descends: pid's parent chain, within the cgroup, reaches root.
func descends(pid, root int, parent map[int]int) bool {
	for seen := 0; seen < len(parent); seen++ {
		pp, ok := parent[pid]
		if !ok {
			return false
		}
		if pp == root {
			return true
		}
		pid = pp
	}
	return false
}

func alive(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}
