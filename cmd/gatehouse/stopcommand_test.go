package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
)

// A platform with its own stop names it in the profile; the stop-signal gate
// sends it (with the session's name) before the target's Stop, and still
// judges the stop from outside.
func TestProfileStopCommandIsSent(t *testing.T) {
	needSandbox(t)
	dir := t.TempDir()
	src := filepath.Join("..", "..", "targets", "profiles")
	for _, f := range []string{"bwrap-hardened.yaml", "bwrap-hardened.nft"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "bwrap-hardened.yaml" {
			marker := filepath.Join(dir, "stops")
			b = []byte(strings.Replace(string(b), "limits:\n", "limits:\n  stop_command: [/bin/sh, -c, 'echo \"$GATEHOUSE_SESSION $GATEHOUSE_TARGET\" >> "+marker+"']\n", 1))
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	r := gatehouse(t, context.Background(), "run", "--profile", filepath.Join(dir, "bwrap-hardened.yaml"), "--gates", "stop-signal",
		"--out", out, "--probe", probetest.Build(t))
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "stops"))
	if err != nil {
		t.Fatalf("the stop command never ran: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	// Three stops per path, two paths.
	if len(lines) != 6 || !strings.HasSuffix(lines[0], " bwrap") {
		t.Fatalf("stop command calls: %q", lines)
	}
	assertNothingLeft(t, r.stdout)
}
