package bwrap_test

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

	"github.com/gatehouse-dev/gatehouse/probe"
	"github.com/gatehouse-dev/gatehouse/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
)

// A sandbox that shares the host's PID and IPC namespaces (bwrap-leaky)
// starts a decoy: the init's own binary, at the init's own path, in fresh
// private namespaces, with a pid that sorts before the real init's in
// /proc. The namespaces read back from outside must still be the real
// init's, the host's: a search of the session's cgroup by executable path
// in /proc order took the decoy and made the shared namespaces look
// private (a false PASS on host-access). Once the init is gone, the read
// fails instead of finding another process.
func TestReadBackIgnoresADecoyInit(t *testing.T) {
	needSandbox(t)
	bin := probetest.Build(t)
	hostPID, _ := os.Readlink("/proc/self/ns/pid")
	hostIPC, _ := os.Readlink("/proc/self/ns/ipc")
	for _, path := range []targets.Path{targets.PathNormal, targets.PathBreach} {
		t.Run(string(path), func(t *testing.T) {
			spec := targets.Spec{Name: "decoy", Path: path, Network: newNetns(t),
				Files: map[string]targets.File{probe.SandboxPath: {HostPath: bin, Mode: 0o755}}}
			s, _ := startSession(t, shipped(t, profiles.Leaky), spec)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			before, err := s.Inspect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			initPID := before.Facts["outside.pid"]
			if before.Facts["outside.ns.pid"] != hostPID || initPID == "" {
				t.Fatalf("before the decoy: outside.ns.pid %q (host %q), init %q", before.Facts["outside.ns.pid"], hostPID, initPID)
			}
			decoy := startDecoy(t, ctx, s, initPID)
			after, err := s.Inspect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := after.Facts["outside.ns.pid"]; got != hostPID {
				t.Fatalf("with decoy %d in the cgroup: outside.ns.pid %q, want the host's %q (the real init's)", decoy, got, hostPID)
			}
			if got := after.Facts["outside.ns.ipc"]; got != hostIPC {
				t.Fatalf("with decoy %d: outside.ns.ipc %q, want the host's %q", decoy, got, hostIPC)
			}
			if after.Facts["outside.pid"] != initPID {
				t.Fatalf("read-back names pid %s, the init is %s", after.Facts["outside.pid"], initPID)
			}
			// The init gone (killed from the host), nothing stands in.
			pid, _ := strconv.Atoi(initPID)
			if err := killAndWait(pid); err != nil {
				t.Fatal(err)
			}
			gone, err := s.Inspect(ctx)
			if gone.Facts["outside.ns.pid"] != "" || (err == nil && gone.Facts["outside.ns.error"] == "") {
				t.Fatalf("init gone: outside.ns.pid %q, error %q, Inspect %v; want no namespaces and an error", gone.Facts["outside.ns.pid"], gone.Facts["outside.ns.error"], err)
			}
		})
	}
}

// startDecoy starts, inside the session, the init binary at the init's
// path ("probe hold" keeps it running) in new user, PID and IPC
// namespaces, retrying until its host pid sorts before the init's in
// /proc's lexical order. Standing in for the many forks a sandbox would
// need to get such a pid, the test sets the host's ns_last_pid first.
func startDecoy(t *testing.T, ctx context.Context, s targets.Session, initPID string) int {
	t.Helper()
	lister := s.(targets.ProcessLister)
	for try := 0; try < 8; try++ {
		if last, ok := lowPIDBefore(initPID); ok {
			_ = os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(last)), 0)
		}
		var out bytes.Buffer
		res, err := s.Exec(ctx, targets.Command{Args: []string{"/bin/sh", "-c",
			`(sleep 300 | unshare --user --map-root-user --pid --ipc --fork /gatehouse/.init hold decoy >/dev/null 2>&1) & sleep 0.5`}, Stdout: &out, Stderr: &out})
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
			if exe != "/gatehouse/.init" || p == initPID {
				continue
			}
			ns, _ := os.Readlink("/proc/" + p + "/ns/pid")
			if first(p, initPID) && ns != "" {
				t.Logf("decoy pid %d, init %s", pid, initPID)
				return pid
			}
			_ = killAndWait(pid) // not first in /proc order: try again
		}
	}
	t.Fatalf("could not start a decoy whose pid sorts before the init's (%s)", initPID)
	return 0
}

// first: /proc/A comes before /proc/B in a lexical listing of /proc.
func first(a, b string) bool {
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
// init's, and returns the pid just below it (for ns_last_pid).
func lowPIDBefore(init string) (int, bool) {
	max := 32768
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		max, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	for start := 301; start+40 < max; start += 50 {
		ok := true
		for p := start; p < start+40 && ok; p++ {
			name := strconv.Itoa(p)
			_, err := os.Stat("/proc/" + name)
			ok = err != nil && name < init
		}
		if ok {
			return start - 1, true
		}
	}
	return 0, false
}

func killAndWait(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return err
	}
	for i := 0; i < 200; i++ {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
			return nil
		}
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if i := bytes.LastIndexByte(b, ')'); i > 0 && len(b) > i+2 && b[i+2] == 'Z' {
			return nil // a zombie: its parent reaps it
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}
