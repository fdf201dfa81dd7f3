package steps

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The stop gate searches the session's writable folders for writes made
// after its stop. A folder there swapped for a link to the host's /proc
// (whose entries are always new) once listed is not entered: only the
// session's own files can be named, and the host's never.
func TestWritesStayInTheSessionsFolders(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "x")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "late"), []byte("after the stop"), 0o644); err != nil {
		t.Fatal(err)
	}
	listedHook = func(rel string) {
		if rel == "x" {
			if err := os.Remove(sub); err != nil {
				t.Error(err)
			}
			if err := os.Symlink("/proc", sub); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(func() { listedHook = nil })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := writes(ctx, []string{dir}, time.Now().Add(-time.Hour))
	if len(got) != 1 || got[0] != filepath.Join(dir, "late") {
		t.Fatalf("writes = %d path(s) (%s), want only %s", len(got), strings.Join(got[:min(len(got), 5)], ", "), filepath.Join(dir, "late"))
	}
}
