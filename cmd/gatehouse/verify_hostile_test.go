package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/evidence/keys"
)

// A FIFO, a link or a sparse giant where evidence should be: verify says
// "evidence refused", names the file and exits 1, and never hangs.
func TestVerifyRefusesHostileEvidence(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "k")
	if _, _, err := keys.GenerateFiles(prefix, []byte("pw")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file string
		plant      func(p string) error
	}{
		{"run.json is a FIFO", "run.json", func(p string) error { return unix.Mkfifo(p, 0o644) }},
		{"results.json links to a host file", "results.json", func(p string) error { return os.Symlink("/etc/passwd", p) }},
		{"results.json is a sparse terabyte", "results.json", func(p string) error {
			f, err := os.Create(p)
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Truncate(1 << 40)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "20261201T000000Z-abcdef")
			if err := os.MkdirAll(filepath.Join(dir, "traces"), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"run.json", "results.json"} {
				if f != tc.file {
					_ = os.WriteFile(filepath.Join(dir, f), []byte(`{"complete": true}`), 0o644)
				}
			}
			if err := tc.plant(filepath.Join(dir, tc.file)); err != nil {
				t.Fatal(err)
			}
			done := make(chan runOutput, 1)
			go func() { done <- gatehouse(t, context.Background(), "verify", dir, "--key", prefix+".pub") }()
			var r runOutput
			select {
			case r = <-done:
			case <-time.After(2 * time.Minute):
				t.Fatal("verify hung")
			}
			if r.code != exitViolation || !strings.Contains(r.stderr, "evidence refused") || !strings.Contains(r.stderr, tc.file) {
				t.Fatalf("exit %d, stderr %q; want 1, \"evidence refused\" naming %s", r.code, r.stderr, tc.file)
			}
			if strings.Contains(r.stderr, "root:") {
				t.Fatalf("the linked host file reached the output: %q", r.stderr)
			}
		})
	}
}
