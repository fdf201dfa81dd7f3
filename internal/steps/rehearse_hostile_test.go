package steps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
)

// small are bounds a test can pass quickly.
var small = untrusted.Limits{Entries: 100, Depth: 8, Bytes: 8 << 20, FileSize: 1 << 20}

// readWithin runs ReadTree and fails the test if it has not come back long
// after its context ended: a read that blocks on a FIFO or walks the host
// never does.
func readWithin(t *testing.T, root string, lim untrusted.Limits) (Tree, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type res struct {
		t   Tree
		err error
	}
	done := make(chan res, 1)
	go func() { tr, err := ReadTree(ctx, root, lim); done <- res{tr, err} }()
	select {
	case r := <-done:
		return r.t, r.err
	case <-time.After(90 * time.Second):
		t.Fatalf("ReadTree(%s) still running 60s after its context ended", root)
		return nil, nil
	}
}

// What an agent can leave in the copy is read within bounds, recorded by
// kind, never opened unless a regular file, never followed.
func TestReadTreeRecordsPlantedEntries(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("/", filepath.Join(root, "to-root")))
	must(syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	must(os.WriteFile(filepath.Join(root, "plain"), []byte("x"), 0o644))
	if os.Geteuid() == 0 {
		must(syscall.Mknod(filepath.Join(root, "zero"), syscall.S_IFCHR|0o666, int(mkdev(1, 5))))
	}
	tr, err := readWithin(t, root, small)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"to-root": "symlink /", "fifo": "other p", "plain": "file 0644 "}
	if os.Geteuid() == 0 {
		want["zero"] = "other Dc"
	}
	for p, w := range want {
		if !strings.HasPrefix(tr[p], w) {
			t.Errorf("%s recorded as %q, want %q...", p, tr[p], w)
		}
	}
	if len(tr) != len(want) {
		t.Errorf("tree %v: read through the link to / (want only %d entries)", tr, len(want))
	}
}

func mkdev(major, minor uint32) uint64 {
	return uint64(major)<<8 | uint64(minor)
}

// A sparse file claiming a terabyte is hashed no further than the bound,
// and the read says it was cut.
func TestReadTreeSparseFileIsCut(t *testing.T) {
	root := t.TempDir()
	f, err := os.Create(filepath.Join(root, "huge"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 40); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = readWithin(t, root, small)
	if !errors.Is(err, untrusted.ErrTooLarge) {
		t.Fatalf("ReadTree of a 1 TiB sparse file: %v, want ErrTooLarge", err)
	}
}

// A flood of files stops the read at the entry bound, with what was read
// and an error that says so.
func TestReadTreeFloodIsCut(t *testing.T) {
	root := t.TempDir()
	for i := range 3 * small.Entries {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("f%04d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := readWithin(t, root, small)
	if !errors.Is(err, untrusted.ErrTooLarge) {
		t.Fatalf("ReadTree of %d files with a bound of %d: %v, want ErrTooLarge", 3*small.Entries, small.Entries, err)
	}
	if len(tr) > small.Entries {
		t.Errorf("%d entries read, bound %d", len(tr), small.Entries)
	}
}

// Entries swapped after they were listed and before they are read or
// entered (a folder for a link to /, a file for a FIFO or a device node):
// the read never leaves the tree, never blocks, never opens anything but a
// regular file.
func TestReadTreeSurvivesSwaps(t *testing.T) {
	swaps := []struct {
		name   string
		folder bool
		plant  func(p string) error
	}{
		{"folder for a link to /", true, func(p string) error { return os.Symlink("/", p) }},
		{"file for a FIFO", false, func(p string) error { return syscall.Mkfifo(p, 0o644) }},
	}
	if os.Geteuid() == 0 {
		swaps = append(swaps, struct {
			name   string
			folder bool
			plant  func(p string) error
		}{"file for /dev/zero's device node", false, func(p string) error {
			return syscall.Mknod(p, syscall.S_IFCHR|0o666, int(mkdev(1, 5)))
		}})
	}
	for _, sw := range swaps {
		t.Run(sw.name, func(t *testing.T) {
			root := t.TempDir()
			target := filepath.Join(root, "x")
			if sw.folder {
				if err := os.Mkdir(target, 0o755); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(target, []byte("regular"), 0o644); err != nil {
				t.Fatal(err)
			}
			listedHook = func(rel string) {
				if rel == "x" {
					if err := os.RemoveAll(target); err != nil {
						t.Error(err)
					}
					if err := sw.plant(target); err != nil {
						t.Error(err)
					}
				}
			}
			t.Cleanup(func() { listedHook = nil })
			tr, err := readWithin(t, root, small)
			if err != nil {
				t.Fatalf("ReadTree: %v", err)
			}
			for p := range tr {
				if p != "x" {
					t.Errorf("ReadTree read %s: outside the tree", p)
				}
			}
			if !sw.folder && strings.HasPrefix(tr["x"], "file") {
				t.Errorf("x recorded as %q: a swapped-in %s was opened and read", tr["x"], sw.name)
			}
		})
	}
}

// CopyTree refuses a destination the sandbox made first (a link to a host
// folder): nothing is written through it.
func TestCopyTreeRefusesPlantedDestination(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "Makefile"), []byte("all:"), 0o644); err != nil {
		t.Fatal(err)
	}
	storage, host := t.TempDir(), t.TempDir()
	if err := os.Symlink(host, filepath.Join(storage, "repo")); err != nil {
		t.Fatal(err)
	}
	if err := CopyTree(context.Background(), src, filepath.Join(storage, "repo"), small); err == nil {
		t.Error("CopyTree into a planted link succeeded")
	}
	if ents, _ := os.ReadDir(host); len(ents) != 0 {
		t.Errorf("CopyTree wrote %d entries on the host through the link", len(ents))
	}
}
