package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/client"
)

// nsKinds are the namespaces read back from outside.
var nsKinds = []string{"pid", "net", "mnt", "ipc", "uts", "user", "cgroup"}

// outsideFacts reads the session's namespaces from the host, the kernel's
// word rather than the probe's: /proc/PID/ns/* of processes the daemon
// names, checked to sit in the container's cgroup, with each one's role,
// pid and command line beside ("outside.role", "outside.pid",
// "outside.cmdline"). Under runc the main one is an exec'd process (what
// the agent's commands are: exec joins the container's namespaces) as
// "outside.ns.*", and the container's init as "outside.init.ns.*". Under
// runsc no agent process exists on the host: the processes compared are
// runsc's own, the sentry first (gvisorFacts). Failures go to
// "outside.ns.error" or "outside.NAME.error": host-access is then
// INCONCLUSIVE, never PASS.
func (s *Session) outsideFacts(ctx context.Context, runtime string, initPID int, f map[string]string) {
	if !s.local() {
		f["outside.ns.error"] = "the daemon is not one Gatehouse runs on this machine: its processes cannot be read"
		return
	}
	id := s.ID()
	engineFacts(initPID, id, f)
	// By the runtime read back, or by what the container's pid is: a runsc
	// sandbox registered under another name is still judged as one.
	if runtime == "runsc" || runscRole(cmdline(initPID), "boot", id) {
		gvisorFacts(initPID, id, f)
		return
	}
	if initPID > 0 && inCgroupOf(initPID, id) == nil {
		describe(f, "outside.init.", "container init", initPID, cmdline(initPID))
		readNS(initPID, "outside.init.ns.", f)
	}
	pid, stop, err := s.holdExec(ctx)
	defer stop()
	if err != nil {
		f["outside.ns.error"] = err.Error()
		return
	}
	describe(f, "outside.", "container process (an exec, as the agent's commands run)", pid, cmdline(pid))
	if n := readNS(pid, "outside.ns.", f); n == 0 {
		f["outside.ns.error"] = fmt.Sprintf("could not read /proc/%d/ns", pid)
	}
}

// engineFacts records the namespaces of the process that runs the runtime
// for this container (containerd's shim, the parent of the container's
// pid) as "engine.ns.*": the host side as the runtime sees it. In the lab
// its net is the daemon's own sealed namespace, which in the field is the
// machine's network; a runsc gofer or sentry told to use "the host's"
// network lands there. Nothing is recorded when that parent sits in the
// container's cgroup: then it is the sandbox's, not the host's.
func engineFacts(initPID int, id string, f map[string]string) {
	pp := parentOf(initPID)
	if initPID <= 0 || pp <= 1 || inCgroupOf(pp, id) == nil {
		return
	}
	describe(f, "engine.", "container engine (the runtime's caller)", pp, cmdline(pp))
	readNS(pp, "engine.ns.", f)
}

func readNS(pid int, prefix string, f map[string]string) int {
	n := 0
	for _, k := range nsKinds {
		if l, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/" + k); err == nil {
			f[prefix+k] = l
			n++
		}
	}
	return n
}

// holdExec starts a sleeping exec as the session's path's user, and
// returns its host pid once it is checked to be in the container's
// cgroup; stop kills it.
func (s *Session) holdExec(ctx context.Context) (int, func(), error) {
	nop := func() {}
	opts := client.ExecCreateOptions{Cmd: []string{s.applet("sleep"), "30"}, Env: []string{execMark + "=" + randHex(8)}}
	if s.path == "assume-breach" {
		opts.User = "0:0"
	}
	created, err := s.cli.ExecCreate(ctx, s.ID(), opts)
	if err != nil {
		return 0, nop, fmt.Errorf("exec for namespaces: %w", err)
	}
	if _, err := s.cli.ExecStart(ctx, created.ID, client.ExecStartOptions{Detach: true}); err != nil {
		return 0, nop, fmt.Errorf("exec for namespaces: %w", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := s.cli.ExecInspect(ctx, created.ID, client.ExecInspectOptions{})
		if err != nil {
			return 0, nop, fmt.Errorf("exec for namespaces: %w", err)
		}
		// Running is reported while the pid is still `runc init`, joining
		// the container's namespaces one by one: read them only once the
		// exec has become the command itself.
		if res.Running && res.PID > 1 && strings.Contains(strings.Join(cmdline(res.PID), " "), "sleep") {
			pid := res.PID
			stop := func() { _ = syscall.Kill(pid, syscall.SIGKILL) }
			if err := inCgroupOf(pid, s.ID()); err != nil {
				return 0, stop, err
			}
			return pid, stop, nil
		}
		if !res.Running && res.ExitCode != 0 || time.Now().After(deadline) {
			return 0, nop, errors.New("the exec for namespaces never ran")
		}
		select {
		case <-ctx.Done():
			return 0, nop, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// applet is busybox under one of the names it answers to (sleep, uname),
// for the harness's own commands in a session. Executed as "busybox" it
// is a shell to a monitor (the builtin rule exec-of-a-shell): the
// harness's own look inside would then be detected as the session's
// shell, and answered by --respond before the probe's first attempt.
func (s *Session) applet(name string) string {
	if s.t.spec.Image != "" {
		return toolsDir + "/bin/" + name
	}
	return "/bin/" + name // a link to busybox in the base image
}
