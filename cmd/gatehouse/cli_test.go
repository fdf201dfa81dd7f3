package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad input gets a clear message and exit 2, before anything is started.
func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	badYAML := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badYAML, []byte("name: x\ntarget: bwrap\nnetwork: lab\nnetwrk: typo\n"), 0o644)
	badFeatures := filepath.Join(dir, "features")
	os.MkdirAll(badFeatures, 0o755)
	os.WriteFile(filepath.Join(badFeatures, "broken.feature"), []byte("@g\nFeature: x\n  Scenario Outline: y\n    Given <a>\n    Examples:\n      | a |\n      | 1 \n"), 0o644)
	hardened := profilePath("bwrap-hardened.yaml")
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no command", nil, ""},
		{"unknown command", []string{"frobnicate"}, "unknown command"},
		{"run without profile", []string{"run"}, "--profile is required"},
		{"missing profile file", []string{"run", "--profile", filepath.Join(dir, "nope.yaml")}, "nope.yaml"},
		{"profile with a typo names the field", []string{"run", "--profile", badYAML}, "netwrk"},
		{"unknown gate", []string{"run", "--profile", hardened, "--gates", "no-such-gate"}, "unknown gate"},
		{"target does not match profile", []string{"run", "--profile", hardened, "--target", "docker"}, "profile"},
		{"malformed feature", []string{"run", "--profile", hardened, "--features", badFeatures}, "broken.feature"},
		{"stray argument", []string{"run", "--profile", hardened, "extra"}, "unexpected argument"},
		{"lab without subcommand", []string{"lab"}, "up, down or status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := gatehouse(t, context.Background(), tt.args...)
			if r.code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr: %s", r.code, exitUsage, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr %q does not mention %q", r.stderr, tt.want)
			}
		})
	}
}

func TestHelpTeachesWithAnExample(t *testing.T) {
	for _, verb := range []string{"run", "lab"} {
		r := gatehouse(t, context.Background(), verb, "--help")
		out := r.stdout + r.stderr
		if r.code != exitOK || !strings.Contains(out, "Example") {
			t.Errorf("%s --help: exit %d, output:\n%s", verb, r.code, out)
		}
	}
	r := gatehouse(t, context.Background(), "help")
	if r.code != exitOK || !strings.Contains(r.stdout, "Exit codes") {
		t.Errorf("help: exit %d, output:\n%s", r.code, r.stdout)
	}
}
