package untrusted_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
)

// hostile makes a folder with the traps a sandbox can plant, and a
// "secret" outside it that no call may read, write or remove.
func hostile(t *testing.T) (dir *untrusted.Dir, root, secret string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "work")
	secret = filepath.Join(base, "secret")
	must(t, os.Mkdir(root, 0o755))
	must(t, os.WriteFile(secret, []byte("host secret"), 0o600))
	must(t, os.Symlink(secret, filepath.Join(root, "link-to-secret")))
	must(t, os.Symlink(base, filepath.Join(root, "link-to-parent")))
	must(t, os.Symlink("/", filepath.Join(root, "link-to-root")))
	must(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	must(t, os.Mkdir(filepath.Join(root, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "sub", "plain"), []byte("plain"), 0o644))
	f, err := os.Create(filepath.Join(root, "sparse"))
	must(t, err)
	must(t, f.Truncate(1<<40)) // a terabyte that takes no disk
	f.Close()
	d, err := untrusted.OpenDir(root)
	must(t, err)
	t.Cleanup(func() { d.Close() })
	return d, root, secret
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestReadsRefuseWhatASandboxCanPlant(t *testing.T) {
	d, _, _ := hostile(t)
	cases := []struct {
		name string
		want func(error) bool
	}{
		{"link-to-secret", func(err error) bool { return errors.Is(err, syscall.ELOOP) }},
		{"link-to-parent/secret", func(err error) bool { return errors.Is(err, syscall.ELOOP) }},
		{"link-to-root/etc/passwd", func(err error) bool { return errors.Is(err, syscall.ELOOP) }},
		{"fifo", func(err error) bool { return errors.Is(err, untrusted.ErrNotRegular) }},
		{"sub", func(err error) bool { return errors.Is(err, untrusted.ErrNotRegular) }},
		{"sparse", func(err error) bool { return errors.Is(err, untrusted.ErrTooLarge) }},
		{"../secret", func(err error) bool { return err != nil }},
		{"/etc/passwd", func(err error) bool { return err != nil }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := d.ReadFile(c.name, 1<<20); done <- err }()
			select {
			case err := <-done:
				if !c.want(err) {
					t.Fatalf("ReadFile(%q) = %v: not the refusal expected", c.name, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("ReadFile(%q) still blocked after 10s", c.name)
			}
		})
	}
	if b, err := d.ReadFile("sub/plain", 100); err != nil || string(b) != "plain" {
		t.Fatalf("a plain file: %q, %v", b, err)
	}
}

func TestOpenDirRefusesALinkOnTheWay(t *testing.T) {
	base := t.TempDir()
	must(t, os.Symlink("/etc", filepath.Join(base, "l")))
	if _, err := untrusted.OpenDir(filepath.Join(base, "l")); !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("OpenDir through a link: %v, want ELOOP", err)
	}
}

func TestWriteFileReplacesWhatWasPlantedWithoutWritingThroughIt(t *testing.T) {
	d, root, secret := hostile(t)
	for _, name := range []string{"link-to-secret", "fifo", "new"} {
		done := make(chan error, 1)
		go func() { done <- d.WriteFile(name, strings.NewReader("ours"), 0o600) }()
		select {
		case err := <-done:
			must(t, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("WriteFile(%q) blocked", name)
		}
		fi, err := os.Lstat(filepath.Join(root, name))
		must(t, err)
		if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s is %v after WriteFile, want a regular 0600 file", name, fi.Mode())
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "host secret" {
		t.Fatalf("the secret outside was written through a link: %q", b)
	}
	if err := d.WriteFile("link-to-parent/secret", strings.NewReader("x"), 0o644); err == nil {
		t.Fatal("a write through a linked folder succeeded")
	}
	if _, err := d.Create("new", 0o644); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create over an existing entry: %v, want ErrExist", err)
	}
}

func TestRemoveAllStaysInside(t *testing.T) {
	d, root, secret := hostile(t)
	must(t, d.RemoveAll("sub"))
	if _, err := os.Lstat(filepath.Join(root, "sub")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("sub still there: %v", err)
	}
	for _, n := range []string{"link-to-parent", "link-to-root", "link-to-secret", "fifo"} {
		must(t, d.RemoveAll(n))
	}
	if _, err := os.Stat(secret); err != nil {
		t.Fatalf("the secret outside went with the links: %v", err)
	}
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Fatal(err)
	}
	must(t, d.RemoveAll("missing"))
}

func TestWalkIsBoundedAndFollowsNoLink(t *testing.T) {
	d, _, _ := hostile(t)
	var seen []string
	h := untrusted.NewHasher(untrusted.Limits{FileSize: 1 << 20})
	err := d.Walk(context.Background(), untrusted.Limits{}, func(dir *untrusted.Dir, e untrusted.Entry) error {
		seen = append(seen, e.Path+" "+e.Mode.Type().String())
		if e.Mode.IsRegular() {
			_, err := h.Sum(context.Background(), dir, baseName(e.Path))
			if e.Path == "sparse" && !errors.Is(err, untrusted.ErrTooLarge) {
				t.Errorf("hashing the sparse file: %v, want ErrTooLarge", err)
			}
		}
		return nil
	})
	must(t, err)
	got := strings.Join(seen, ",")
	for _, n := range []string{"fifo p---------", "link-to-root L---------", "sub d---------", "sub/plain ----------"} {
		if !strings.Contains(got, n) {
			t.Errorf("walk did not report %q: %s", n, got)
		}
	}
	if strings.Contains(got, "link-to-root/") || strings.Contains(got, "link-to-parent/") {
		t.Errorf("walk went through a link: %s", got)
	}

	flood := t.TempDir()
	for i := range 50 {
		must(t, os.WriteFile(filepath.Join(flood, "f"+strings.Repeat("x", i)), nil, 0o644))
	}
	fd, err := untrusted.OpenDir(flood)
	must(t, err)
	defer fd.Close()
	err = fd.Walk(context.Background(), untrusted.Limits{Entries: 10}, func(*untrusted.Dir, untrusted.Entry) error { return nil })
	if !errors.Is(err, untrusted.ErrTooLarge) {
		t.Fatalf("a flood of 50 entries under a bound of 10: %v", err)
	}

	deep := t.TempDir()
	p := deep
	for range 10 {
		p = filepath.Join(p, "d")
	}
	must(t, os.MkdirAll(p, 0o755))
	dd, err := untrusted.OpenDir(deep)
	must(t, err)
	defer dd.Close()
	err = dd.Walk(context.Background(), untrusted.Limits{Depth: 5}, func(*untrusted.Dir, untrusted.Entry) error { return nil })
	if !errors.Is(err, untrusted.ErrTooLarge) {
		t.Fatalf("10 deep under a bound of 5: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := dd.Walk(ctx, untrusted.Limits{}, func(*untrusted.Dir, untrusted.Entry) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("a walk with an ended context: %v", err)
	}
}

func baseName(p string) string { return p[strings.LastIndex(p, "/")+1:] }

func TestRemoveAllStopsAtItsDepth(t *testing.T) {
	base := t.TempDir()
	fd, err := syscall.Open(base, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	must(t, err)
	// 300 levels, made through descriptors: deeper than RemoveAll goes.
	for range 300 {
		must(t, syscall.Mkdirat(fd, "d", 0o755))
		next, err := syscall.Openat(fd, "d", syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
		must(t, err)
		syscall.Close(fd)
		fd = next
	}
	syscall.Close(fd)
	d, err := untrusted.OpenDir(base)
	must(t, err)
	defer d.Close()
	if err := d.RemoveAll("d"); !errors.Is(err, untrusted.ErrTooLarge) {
		t.Fatalf("RemoveAll of 300 levels: %v, want ErrTooLarge", err)
	}
	// Left for the test's own clean-up, which has no such bound.
}
