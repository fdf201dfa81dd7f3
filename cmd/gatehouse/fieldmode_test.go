package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestDockerHostIsRefused: field mode is not built, so `run --docker-host`
// refuses with exit 2, says what is missing, writes no run folder (no
// verdict) and never contacts the daemon: a listener stands in for it and
// must see no connection. The socket is a file in a temp folder; nothing
// goes to any network.
func TestDockerHostIsRefused(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var dialled atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dialled.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	host := "unix://" + sock
	for _, c := range []struct {
		name string
		args []string
		want []string // all in stderr
	}{
		{"docker", []string{"--profile", profilePath("docker-hardened.yaml")},
			[]string{"not built", "callback", "DNS", "metadata", "inference", "positive control", "docs/docker.md"}},
		{"gvisor", []string{"--profile", profilePath("gvisor-hardened.yaml"), "--target", "gvisor"},
			[]string{"not built", "callback", "DNS", "metadata", "inference"}},
		{"bwrap", []string{"--profile", profilePath("bwrap-hardened.yaml")},
			[]string{"docker and gvisor targets only"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, c.name)
			args := append([]string{"run", "--docker-host", host, "--out", out}, c.args...)
			r := gatehouse(t, context.Background(), args...)
			if r.code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr: %s", r.code, exitUsage, r.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, r.stderr)
				}
			}
			if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
				t.Errorf("a refused run wrote %d entries under --out", len(entries))
			}
		})
	}
	if n := dialled.Load(); n != 0 {
		t.Errorf("the field daemon's socket was dialled %d times", n)
	}
}
