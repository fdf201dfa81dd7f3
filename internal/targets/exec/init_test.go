package exec_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	gexec "github.com/gatehouse-dev/gatehouse/internal/targets/exec"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/targettest"
)

// The exec-sh wrapper makes no namespaces: the session shares the host's
// PID and IPC namespaces. A decoy of the init (its binary, at its path,
// in private namespaces, with a pid sorting first in /proc) must not
// change the namespaces read back from outside; once the init is gone
// nothing stands in for it. The host user read back is the uid the
// wrapper was started as: the profile's on the normal path, root on the
// assume-breach path.
func TestReadBackIsThePinnedInit(t *testing.T) {
	needRoot(t)
	bin := probetest.Build(t)
	hostPID, _ := os.Readlink("/proc/self/ns/pid")
	hostIPC, _ := os.Readlink("/proc/self/ns/ipc")
	for _, tc := range []struct {
		path targets.Path
		uid  string
		says string
	}{{targets.PathNormal, "1000", "host uid 1000"}, {targets.PathBreach, "0", "host root"}} {
		t.Run(string(tc.path), func(t *testing.T) {
			p := loadTestdata(t, "exec-sh.yaml")
			s := startSession(t, p, targets.Spec{Name: "decoy", Path: tc.path, Network: newNetns(t),
				Files: map[string]targets.File{wire.SandboxPath: {HostPath: bin, Mode: 0o755}}})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			before, err := s.Inspect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			f := before.Facts
			initPID := f["outside.pid"]
			if f["outside.ns.pid"] != hostPID || initPID == "" {
				t.Fatalf("before the decoy: outside.ns.pid %q (host %q), init %q", f["outside.ns.pid"], hostPID, initPID)
			}
			if f["outside.uid"] != tc.uid || !strings.Contains(f["host_user"], tc.says) || !strings.Contains(f["host_user"], "the uid the wrapper was started as") {
				t.Fatalf("host user: uid %q, %q", f["outside.uid"], f["host_user"])
			}
			decoy := targettest.StartDecoy(t, ctx, s, gexec.InitPath, initPID)
			after, err := s.Inspect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := after.Facts["outside.ns.pid"]; got != hostPID || after.Facts["outside.ns.ipc"] != hostIPC || after.Facts["outside.pid"] != initPID {
				t.Fatalf("with decoy %d: outside pid %s, ns.pid %q, ns.ipc %q; want the init %s in the host's %q, %q", decoy,
					after.Facts["outside.pid"], got, after.Facts["outside.ns.ipc"], initPID, hostPID, hostIPC)
			}
			if _, err := s.(targets.SessionCredentialer).SessionCredentials(ctx); err != nil {
				t.Fatalf("SessionCredentials with the init alive: %v", err)
			}
			pid, _ := strconv.Atoi(initPID)
			if err := targettest.KillAndWait(pid); err != nil {
				t.Fatal(err)
			}
			if _, err := s.(targets.SessionCredentialer).SessionCredentials(ctx); err == nil {
				t.Fatal("SessionCredentials read an environment with the init gone (the decoy's?)")
			}
			gone, err := s.Inspect(ctx)
			if gone.Facts["outside.ns.pid"] != "" || (err == nil && gone.Facts["outside.ns.error"] == "") {
				t.Fatalf("init gone: outside.ns.pid %q, error %q, Inspect %v; want no namespaces and an error", gone.Facts["outside.ns.pid"], gone.Facts["outside.ns.error"], err)
			}
		})
	}
}
