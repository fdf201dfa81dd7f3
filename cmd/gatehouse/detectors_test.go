package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Detection sources are not in this build: asking for one is refused
// (exit 2) before anything starts, never a run without detection. Bad
// syntax is a usage error too; --help documents the flags.
func TestDetectionFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	prof := profilePath("bwrap-hardened.yaml")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"alerts file missing", []string{"--alerts", "falco:/nonexistent/falco.jsonl"}, "--alerts falco:/nonexistent/falco.jsonl"},
		{"listen off loopback", []string{"--alerts-listen", "192.0.2.1:2801"}, "loopback"},
		{"unknown monitor", []string{"--monitor", "falco"}, "the monitors are builtin, audit"},
		{"unknown monitor in a list", []string{"--monitor", "builtin,falco"}, "the monitors are builtin, audit"},
		{"a monitor twice", []string{"--monitor", "audit,audit"}, "audit named twice"},
		{"bad alerts spec", []string{"--alerts", "splunk:/x"}, "want KIND:PATH"},
		{"bad listen", []string{"--alerts-listen", "nowhere"}, "want HOST:PORT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
			args := append([]string{"run", "--profile", prof, "--out", out}, c.args...)
			r := gatehouse(t, context.Background(), args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d, stderr %q: want exit %d mentioning %q", r.code, r.stderr, exitUsage, c.want)
			}
			if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
				t.Errorf("a refused run wrote %d entries under --out", len(entries))
			}
		})
	}
	h := gatehouse(t, context.Background(), "run", "--help")
	for _, w := range []string{"--monitor", "--alerts", "--alerts-listen", "not measured"} {
		if !strings.Contains(h.stderr+h.stdout, w) {
			t.Errorf("run --help does not mention %q", w)
		}
	}
	if srcs, err := detectors(detectFlags{}); err != nil || len(srcs) != 0 {
		t.Errorf("no flags: %v %v, want no sources and no error", srcs, err)
	}
}

func TestDetectionRequestFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--require-detection", "no-such-gate"}, "unknown gate"},
		{[]string{"--max-detection-latency", "2s"}, "needs --require-detection"},
	} {
		r := gatehouse(t, context.Background(), append([]string{"gate", "--key", "/nonexistent.pub", "--policy", profilePath("bwrap-hardened.yaml")}, c.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q: want usage mentioning %q", c.args, r.code, r.stderr, c.want)
		}
	}
}
