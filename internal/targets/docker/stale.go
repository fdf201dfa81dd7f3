package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/hostproc"
)

// ReapStale removes what lab daemons of processes that no longer exist
// left behind (a crash, SIGKILL): their dockerd if it still runs, mounts,
// cgroups, state folder /run/ghd-<pid> and namespace. It returns the state
// folders it removed. Daemons of live processes are left alone. A pid in
// a stale pid file is signalled only when it is provably that daemon (see
// staleDockerd): the number may belong to any process by now.
func ReapStale(ctx context.Context) ([]string, error) {
	dirs, err := filepath.Glob("/run/ghd-*")
	if err != nil {
		return nil, err
	}
	var done []string
	var errs []error
	for _, dir := range dirs {
		pid, err := strconv.ParseInt(strings.TrimPrefix(filepath.Base(dir), "ghd-"), 16, 32)
		if err != nil || pid <= 0 || syscall.Kill(int(pid), 0) == nil {
			continue
		}
		if p := staleDockerd(dir); p != nil {
			_ = p.Signal(syscall.SIGKILL)
			for i := 0; i < 20 && p.Alive(); i++ {
				time.Sleep(20 * time.Millisecond)
			}
			p.Close()
		}
		// containerd's shims outlive dockerd and containerd by design
		// (live restore): seen running on after a killed test binary's
		// daemon was reaped, each holding its task's state.
		killStaleShims(dir)
		e := errors.Join(removeCgroups(ctx, cgroupParent(dir)), unmountUnder(dir))
		if b, err := os.ReadFile(filepath.Join(dir, "netns")); err == nil {
			e = errors.Join(e, deleteNetns(ctx, strings.TrimSpace(string(b))))
		}
		// The state folder is the only record of what is left: it goes
		// last, and only once the rest went (the next sweep tries again).
		if e == nil {
			e = os.RemoveAll(dir)
		}
		if e != nil {
			errs = append(errs, fmt.Errorf("%s: %w", dir, e))
			continue
		}
		done = append(done, dir)
	}
	if err := errors.Join(errs...); err != nil {
		return done, fmt.Errorf("docker: reap stale daemons: %w", err)
	}
	return done, nil
}

// startRecord is the file the daemon's start leaves beside dockerd's own
// pid file: "PID START", START being field 22 of /proc/PID/stat.
const startRecord = "dockerd.start"

// recordStart writes the start record of the dockerd at pid.
func recordStart(stateDir string, pid int) error {
	st, err := hostproc.ReadStat(pid)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(stateDir, startRecord), []byte(fmt.Sprintf("%d %d\n", pid, st.Start)), 0o600)
}

// staleDockerd pins the process the folder's pid file names, and returns
// it only if it is the dockerd that folder's daemon ran: started at the
// recorded time (when a record exists), running the dockerd binary, with
// this folder's --pidfile and --data-root on its command line. Anything
// else (the pid reused by an unrelated process) is left alone: nil.
func staleDockerd(dir string) *hostproc.Proc {
	b, err := os.ReadFile(filepath.Join(dir, "dockerd.pid"))
	if err != nil {
		return nil
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return nil
	}
	bin, err := exec.LookPath("dockerd")
	if err != nil {
		return nil
	}
	p, err := hostproc.Pin(pid)
	if err != nil {
		return nil
	}
	if err := isDaemonOf(p, dir, bin); err != nil {
		p.Close()
		return nil
	}
	return p
}

// isDaemonOf checks that the pinned process is the dockerd (binary bin)
// of the state folder dir.
func isDaemonOf(p *hostproc.Proc, dir, bin string) error {
	if b, err := os.ReadFile(filepath.Join(dir, startRecord)); err == nil {
		var pid int
		var start uint64
		if _, err := fmt.Sscanf(string(b), "%d %d", &pid, &start); err != nil || pid != p.PID || start != p.Start {
			return fmt.Errorf("pid %d started at %d, not the recorded %q", p.PID, p.Start, strings.TrimSpace(string(b)))
		}
	}
	want, err := os.Stat(bin)
	if err != nil {
		return err
	}
	argv, err := p.Cmdline()
	if err != nil {
		return err
	}
	return p.Read(func(proc string) error {
		got, err := os.Stat(proc + "/exe")
		if err != nil || !os.SameFile(got, want) {
			return fmt.Errorf("pid %d does not run %s", p.PID, bin)
		}
		if !hasFlag(argv, "--pidfile", filepath.Join(dir, "dockerd.pid")) || !hasFlag(argv, "--data-root", filepath.Join(dir, "d")) {
			return fmt.Errorf("pid %d is not the daemon of %s: %q", p.PID, dir, argv)
		}
		return nil
	})
}

// hasFlag: argv has "flag value" or "flag=value".
func hasFlag(argv []string, flag, value string) bool {
	if i := slices.Index(argv, flag); i >= 0 && i+1 < len(argv) && argv[i+1] == value {
		return true
	}
	return slices.Contains(argv, flag+"="+value)
}

// killStaleShims kills the containerd shims of the daemon whose state
// folder is dir: processes running a containerd-shim binary whose
// -address names containerd's socket under dir. Each is pinned, checked
// through the pin and signalled through its pidfd, so a pid reused since
// the listing is never hit.
func killStaleShims(dir string) {
	pids, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range pids {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid <= 1 {
			continue
		}
		p, err := hostproc.Pin(pid)
		if err != nil {
			continue
		}
		if isShimOf(p, dir) {
			_ = p.Signal(syscall.SIGKILL)
		}
		p.Close()
	}
}

// isShimOf: the pinned process runs a containerd-shim binary of the daemon
// whose state folder is dir.
func isShimOf(p *hostproc.Proc, dir string) bool {
	argv, err := p.Cmdline()
	if err != nil || len(argv) == 0 {
		return false
	}
	i := slices.Index(argv, "-address")
	if i < 0 || i+1 >= len(argv) || !strings.HasPrefix(argv[i+1], dir+"/") {
		return false
	}
	ok := false
	_ = p.Read(func(proc string) error {
		exe, err := os.Readlink(proc + "/exe")
		ok = err == nil && strings.HasPrefix(filepath.Base(exe), "containerd-shim")
		return nil
	})
	return ok
}
