package targettest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// StartDecoy starts, inside session s, a decoy of its init: the init
// binary at initPath ("probe hold" keeps it running) in new user, PID and
// IPC namespaces, with a host pid that sorts before initPID's in a lexical
// listing of /proc. It retries until the decoy sorts first and returns its
// host pid; the session must list its processes (targets.ProcessLister),
// and its sandbox must let an unprivileged user make a user namespace.
//
// A sandbox would fork until it got such a pid; standing in for those
// forks, StartDecoy sets the host's ns_last_pid (it needs root).
func StartDecoy(t *testing.T, ctx context.Context, s targets.Session, initPath, initPID string) int {
	t.Helper()
	lister, ok := s.(targets.ProcessLister)
	if !ok {
		t.Fatal("StartDecoy: the session does not list its processes")
	}
	script := `(sleep 300 | unshare --user --map-root-user --pid --ipc --fork "$1" hold decoy >/dev/null 2>&1) & sleep 0.5`
	for try := 0; try < 8; try++ {
		if last, ok := lowPIDBefore(initPID); ok {
			_ = os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(last)), 0)
		}
		var out bytes.Buffer
		res, err := s.Exec(ctx, targets.Command{Args: []string{"/bin/sh", "-c", script, "sh", initPath}, Stdout: &out, Stderr: &out})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("start decoy: %v, exit %d: %s", err, res.ExitCode, out.String())
		}
		pids, err := lister.Processes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, pid := range pids {
			p := strconv.Itoa(pid)
			exe, _ := os.Readlink("/proc/" + p + "/exe")
			if exe != initPath || p == initPID {
				continue
			}
			if sortsFirst(p, initPID) {
				t.Logf("decoy pid %d, init %s", pid, initPID)
				return pid
			}
			_ = KillAndWait(pid) // not first in /proc order: again
		}
	}
	t.Fatalf("could not start a decoy whose pid sorts before the init's (%s)", initPID)
	return 0
}

// sortsFirst: /proc/A comes before /proc/B in a lexical listing of /proc
// (the order filepath.Glob, and so a search by name, meets them in).
func sortsFirst(a, b string) bool {
	l, _ := filepath.Glob("/proc/[0-9]*")
	ia, ib := -1, -1
	for i, d := range l {
		switch filepath.Base(d) {
		case a:
			ia = i
		case b:
			ib = i
		}
	}
	return ia >= 0 && ib >= 0 && ia < ib
}

// lowPIDBefore finds a free run of pids whose names all sort before
// init's, and returns the pid just below it (for ns_last_pid). Every start
// is tried, longest runs first: with init at 10022 the only such runs are
// 10000-10021 and a few shorter ones (a search of 40-pid runs in steps of
// 50 found none, and the decoy failed in CI).
func lowPIDBefore(init string) (int, bool) {
	max := 32768
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		max, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	used := map[int]bool{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if n, err := strconv.Atoi(filepath.Base(d)); err == nil {
			used[n] = true
		}
	}
	for _, want := range []int{40, 20, 12} {
		run := 0
		for p := 301; p < max; p++ {
			if used[p] || strconv.Itoa(p) >= init {
				run = 0
				continue
			}
			if run++; run == want {
				return p - want, true
			}
		}
	}
	return 0, false
}

// KillAndWait SIGKILLs pid and waits (at most 2 s) until it is gone or a
// zombie its parent will reap.
func KillAndWait(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return err
	}
	for i := 0; i < 200; i++ {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return nil
		}
		if i := bytes.LastIndexByte(b, ')'); i > 0 && len(b) > i+2 && b[i+2] == 'Z' {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}
