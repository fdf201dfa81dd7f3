package bwrap_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/targets/bwrap"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
	"github.com/gatehouse-dev/gatehouse/targets/targettest"
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
				Files: map[string]targets.File{wire.SandboxPath: {HostPath: bin, Mode: 0o755}}}
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
			decoy := targettest.StartDecoy(t, ctx, s, bwrap.InitPath, initPID)
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
			if err := targettest.KillAndWait(pid); err != nil {
				t.Fatal(err)
			}
			gone, err := s.Inspect(ctx)
			if gone.Facts["outside.ns.pid"] != "" || (err == nil && gone.Facts["outside.ns.error"] == "") {
				t.Fatalf("init gone: outside.ns.pid %q, error %q, Inspect %v; want no namespaces and an error", gone.Facts["outside.ns.pid"], gone.Facts["outside.ns.error"], err)
			}
		})
	}
}
