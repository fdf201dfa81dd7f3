package hostwrite

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// hostLayout makes root/var/run -> root/run, the way a host links them,
// and returns a start after the link was made.
func hostLayout(t *testing.T, dirMode os.FileMode) (root string, start time.Time) {
	t.Helper()
	root = t.TempDir()
	for _, d := range []string{"run", "var"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "run"), filepath.Join(root, "var", "run")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "var"), dirMode); err != nil {
		t.Fatal(err)
	}
	// The link is older than the run: past the file clock's slack.
	time.Sleep(3 * clockSlack)
	return root, time.Now()
}

// A mount table names places by the path they were mounted at, which may
// go through the host's own links (/var/run -> /run): those are followed,
// and only those.
func TestUndoThroughTheHostsOwnLinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the host's links are root's")
	}
	t.Run("an old root link in a root-only folder is followed", func(t *testing.T) {
		root, start := hostLayout(t, 0o755)
		p := filepath.Join(root, "run", "cache", "gatehouse-state")
		write(t, p, note)
		w := Write{Under: root, Rel: "var/run/cache/gatehouse-state", Form: File, Payloads: []string{note}, Since: start, Mapped: true}
		got, err := w.Undo()
		if err != nil || got != Removed {
			t.Fatalf("Undo: %v, %v; want removed", got, err)
		}
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the run's file is still there: %v", err)
		}
		exists, _, err := Look(root, "var/run/cache", start)
		if err != nil || !exists {
			t.Errorf("Look through the host's link: %v, %v", exists, err)
		}
	})
	t.Run("a socket mounted where a folder is named is nothing", func(t *testing.T) {
		root, start := hostLayout(t, 0o755)
		l, err := net.Listen("unix", filepath.Join(root, "run", "engine.sock"))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		w := Write{Under: root, Rel: "var/run/engine.sock/gatehouse-state", Form: File, Payloads: []string{note}, Since: start, Mapped: true}
		got, err := w.Undo()
		if err != nil || got != Nothing {
			t.Errorf("Undo: %v, %v; want nothing there", got, err)
		}
	})
	t.Run("a link in a folder others may write is not followed", func(t *testing.T) {
		root, start := hostLayout(t, 0o777)
		p := filepath.Join(root, "run", "gatehouse-state")
		write(t, p, note)
		w := Write{Under: root, Rel: "var/run/gatehouse-state", Form: File, Payloads: []string{note}, Since: start, Mapped: true}
		got, err := w.Undo()
		if err == nil || !errors.Is(err, unix.ELOOP) || got != Nothing {
			t.Errorf("Undo: %v, %v; want a could-not-check error", got, err)
		}
		if _, err := os.Stat(p); err != nil {
			t.Errorf("removed through the link: %v", err)
		}
		if !w.Leftover(err) {
			t.Error("a mapped place that could not be checked is not counted as left")
		}
	})
	t.Run("a link made during the run is not followed", func(t *testing.T) {
		root := t.TempDir()
		start := time.Now().Add(-time.Second)
		real := filepath.Join(root, "real")
		write(t, filepath.Join(real, "gatehouse-state"), note)
		if err := os.Symlink(real, filepath.Join(root, "cache")); err != nil {
			t.Fatal(err)
		}
		got, err := Write{Under: root, Rel: "cache/gatehouse-state", Form: File, Payloads: []string{note}, Since: start}.Undo()
		if err == nil || got != Nothing {
			t.Errorf("Undo: %v, %v; want a could-not-check error", got, err)
		}
		if _, err := os.Stat(filepath.Join(real, "gatehouse-state")); err != nil {
			t.Errorf("removed through the link: %v", err)
		}
	})
	t.Run("a link not owned by root is not followed", func(t *testing.T) {
		root, start := hostLayout(t, 0o755)
		if err := os.Lchown(filepath.Join(root, "var", "run"), 1000, 1000); err != nil {
			t.Fatal(err)
		}
		// Lchown changed the link's ctime: make the run start after it.
		time.Sleep(3 * clockSlack)
		start = time.Now()
		write(t, filepath.Join(root, "run", "gatehouse-state"), note)
		got, err := Write{Under: root, Rel: "var/run/gatehouse-state", Form: File, Payloads: []string{note}, Since: start}.Undo()
		if err == nil || got != Nothing {
			t.Errorf("Undo: %v, %v; want a could-not-check error", got, err)
		}
	})
}
