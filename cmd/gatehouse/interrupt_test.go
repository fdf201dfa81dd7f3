package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
)

// Ctrl-C in the middle of a run: exit 3, no run folder that looks complete,
// and nothing left behind (namespaces, sandbox processes).
func TestInterruptLeavesNothingBehind(t *testing.T) {
	needSandbox(t)
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	// Long enough for the lab and the first sessions to be up, short of the end.
	timer := time.AfterFunc(1500*time.Millisecond, cancel)
	defer timer.Stop()
	r := gatehouse(t, ctx, "run", "--profile", profilePath("bwrap-hardened.yaml"), "--out", out, "--probe", probetest.Build(t))
	if r.code != exitInconclusive {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, exitInconclusive, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "interrupted") {
		t.Errorf("stderr does not say the run was interrupted: %s", r.stderr)
	}
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".partial") {
			t.Errorf("an interrupted run left %s, which looks complete", e.Name())
			continue
		}
		b, err := os.ReadFile(filepath.Join(out, e.Name(), "run.json"))
		if err == nil && !strings.Contains(string(b), `"complete": false`) {
			t.Errorf("partial run.json does not say complete=false:\n%s", b)
		}
	}
	assertNothingLeft(t, r.stdout)
}
