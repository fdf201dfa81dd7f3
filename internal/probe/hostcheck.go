package probe

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// dangerousCaps are capabilities that let a process reach past its
// namespaces (bit number -> name).
var dangerousCaps = map[uint]string{
	1: "cap_dac_override", 2: "cap_dac_read_search", 12: "cap_net_admin", 16: "cap_sys_module",
	17: "cap_sys_rawio", 19: "cap_sys_ptrace", 21: "cap_sys_admin", 22: "cap_sys_boot", 27: "cap_mknod",
}

// kernelDevices are device nodes that expose the host kernel or memory.
var kernelDevices = []string{"/dev/kmsg", "/dev/mem", "/dev/kmem", "/dev/port"}

// pidsExposed is how many visible processes we call "more than a sandbox
// has": a session runs a handful; a host runs hundreds.
const pidsExposed = 32

// doHostCheck runs one in-sandbox check (see KindHostCheck). It writes
// nothing: writability is asked with access(2), which opens no file.
func doHostCheck(s wire.Step, rep *wire.Report) error {
	var msg string
	var err error
	switch t := s.Target; {
	case t == "pids":
		msg, err = checkPids()
	case t == "caps":
		msg, err = checkCaps()
	case t == "ns":
		msg = checkNs()
	case t == "devices":
		msg = checkDevices()
	case t == "release-agent":
		msg, err = checkReleaseAgent()
	case strings.HasPrefix(t, "writable:"):
		msg = checkWritable(strings.TrimPrefix(t, "writable:"))
	default:
		return fmt.Errorf("unknown host check %q", t)
	}
	rep.Excerpt = msg
	return err
}

func checkPids() (string, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return "", err
	}
	n := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			n++
		}
	}
	one, _ := os.ReadFile("/proc/1/comm")
	state := "ok"
	if n > pidsExposed {
		state = "exposed"
	}
	return fmt.Sprintf("%s: %d processes visible, pid 1 is %q", state, n, strings.TrimSpace(string(one))), nil
}

func checkCaps() (string, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "CapEff:")
		if !ok {
			continue
		}
		bits, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		if err != nil {
			return "", err
		}
		var held []string
		for bit := uint(0); bit < 64; bit++ {
			if name, ok := dangerousCaps[bit]; ok && bits&(1<<bit) != 0 {
				held = append(held, name)
			}
		}
		if len(held) == 0 {
			return fmt.Sprintf("ok: CapEff %s holds no dangerous capability", strings.TrimSpace(v)), nil
		}
		return fmt.Sprintf("exposed: CapEff %s holds %s", strings.TrimSpace(v), strings.Join(held, ",")), nil
	}
	return "", fmt.Errorf("no CapEff in /proc/self/status")
}

func checkNs() string {
	var parts []string
	for _, n := range []string{"cgroup", "ipc", "mnt", "net", "pid", "user", "uts"} {
		if l, err := os.Readlink("/proc/self/ns/" + n); err == nil {
			parts = append(parts, l)
		}
	}
	return "ok: " + strings.Join(parts, " ")
}

// checkDevices names kernel and block devices the sandbox may open.
func checkDevices() string {
	cands := append([]string(nil), kernelDevices...)
	if ents, err := os.ReadDir("/dev"); err == nil {
		for _, e := range ents {
			if e.Type()&fs.ModeDevice != 0 && e.Type()&fs.ModeCharDevice == 0 {
				cands = append(cands, filepath.Join("/dev", e.Name()))
			}
		}
	}
	var open []string
	for _, d := range cands {
		if unix.Access(d, unix.R_OK) == nil || unix.Access(d, unix.W_OK) == nil {
			open = append(open, d)
		}
	}
	if len(open) == 0 {
		return "ok: no kernel or block device accessible"
	}
	if len(open) > 12 {
		open = append(open[:12], fmt.Sprintf("and %d more", len(open)-12))
	}
	return "exposed: accessible devices " + strings.Join(open, " ")
}

// checkReleaseAgent looks for a cgroup v1 hierarchy whose release_agent the
// sandbox could write (the classic escape's precondition).
func checkReleaseAgent() (string, error) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || fields[2] != "cgroup" {
			continue
		}
		n++
		ra := filepath.Join(fields[1], "release_agent")
		if unix.Access(ra, unix.W_OK) == nil {
			return "exposed: " + ra + " is writable", nil
		}
	}
	return fmt.Sprintf("ok: %d cgroup v1 mounts, no writable release_agent", n), nil
}

func checkWritable(p string) string {
	if _, err := os.Lstat(p); err != nil {
		return "ok: " + p + " absent"
	}
	if err := unix.Access(p, unix.W_OK); err != nil {
		return "ok: " + p + " not writable: " + err.Error()
	}
	return "exposed: " + p + " is writable"
}
