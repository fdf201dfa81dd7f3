package realwrap_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/targets/exec"
	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/realwrap"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
)

// Codex with the network off refuses getsockopt in its seccomp filter; the
// session's init must still answer, and two commands of one session must
// run in the same sandbox.
func TestCodexNetworkOffSession(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: joins network namespaces, mounts, cgroups")
	}
	for _, path := range []targets.Path{targets.PathNormal, targets.PathBreach} {
		t.Run(string(path), func(t *testing.T) {
			s := startProfile(t, "codex-workspace-write.yaml", path)
			var out bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := s.Exec(ctx, targets.Command{Args: []string{"/bin/sh", "-c", "echo hello; id -u"}, Stdout: &out, Stderr: &out})
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("exec: %v %+v: %s", err, res, out.String())
			}
			if !strings.HasPrefix(out.String(), "hello\n") {
				t.Fatalf("output %q, result %+v", out.String(), res)
			}
		})
	}
}

// startProfile starts a session of a shipped profile in a namespace with
// only lo, skipping when the tool is not installed.
func startProfile(t *testing.T, name string, path targets.Path) targets.Session {
	t.Helper()
	p, err := kinds.LoadFS(profiles.FS, name)
	if err != nil {
		t.Fatal(err)
	}
	tgt := newTarget(t, exec.Options{Profile: p, Root: t.TempDir(), Init: probetest.Build(t)})
	t.Cleanup(func() {
		if err := tgt.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := tgt.Start(ctx, withPlaces(t, targets.Spec{Name: "t", Path: path, Network: emptyNetns(t)}))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return s
}

// srt keeps its proxy sockets in the session's own folder, not the host's
// /tmp: srt leaves them when it is killed at Stop, and in /tmp a later srt
// that got the same pid failed at start with EADDRINUSE.
func TestSRTSocketsStayInTheSession(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: joins network namespaces, mounts, cgroups")
	}
	s := startProfile(t, "srt-default.yaml", targets.PathNormal)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := s.Exec(ctx, targets.Command{Args: []string{"/bin/sh", "-c", "ls " + realwrap.SRTWrapperTmp}, Stdout: &out, Stderr: &out})
	if err != nil || res.ExitCode != 0 || !strings.Contains(out.String(), "srt-mux-") {
		t.Fatalf("srt's sockets not in %s: %v %+v: %q", realwrap.SRTWrapperTmp, err, res, out.String())
	}
}
