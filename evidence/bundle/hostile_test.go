package bundle_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
)

// verifyOrHang runs Verify and fails the test if it does not return: a
// FIFO opened for reading, or an exabyte hashed, never returns at all.
// (The guard is minutes long: it tells a hang from a slow machine.)
func verifyOrHang(t *testing.T, run func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- run() }()
	select {
	case err := <-done:
		return err
	case <-time.After(2 * time.Minute):
		t.Fatal("verify hung on a hostile file")
		return nil
	}
}

// A sandbox, or whoever can write the folder, puts something else where
// evidence should be: verify refuses it, names the file, and neither hangs
// nor reads through it.
func TestVerifyRefusesHostileFiles(t *testing.T) {
	_, v, _ := testKeys(t)
	secret := filepath.Join(t.TempDir(), "host-secret")
	if err := os.WriteFile(secret, []byte(`{"id":"host secret","complete":true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	replace := func(rel string, make func(p string) error) func(t *testing.T, d string) {
		return func(t *testing.T, d string) {
			p := filepath.Join(d, rel)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := make(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	fifo := func(p string) error { return unix.Mkfifo(p, 0o644) }
	link := func(p string) error { return os.Symlink(secret, p) }
	sparse := func(p string) error { // a terabyte that takes no disk
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Truncate(1 << 40)
	}
	cases := []struct {
		name     string
		mutate   func(t *testing.T, d string)
		wantKind error
		wantFile string
	}{
		{"results.json is a FIFO", replace("results.json", fifo), bundle.ErrUnsafePath, "results.json"},
		{"run.json is a FIFO", replace("run.json", fifo), bundle.ErrUnsafePath, "run.json"},
		{"a trace is a FIFO", replace("traces/endpoint-hits.jsonl", fifo), bundle.ErrUnsafePath, "traces/endpoint-hits.jsonl"},
		{"results.json links to a host file", replace("results.json", link), bundle.ErrUnsafePath, "results.json"},
		{"run.json links to a host file", replace("run.json", link), bundle.ErrUnsafePath, "run.json"},
		{"results.json is a sparse terabyte", replace("results.json", sparse), bundle.ErrTooLarge, "results.json"},
		{"a trace is a sparse terabyte", replace("traces/endpoint-hits.jsonl", sparse), bundle.ErrTooLarge, "traces/endpoint-hits.jsonl"},
		{"the traces folder links to the host", func(t *testing.T, d string) {
			if err := os.RemoveAll(filepath.Join(d, "traces")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Dir(secret), filepath.Join(d, "traces")); err != nil {
				t.Fatal(err)
			}
		}, bundle.ErrUnsafePath, "traces"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := sealed(t)
			tc.mutate(t, dir)
			err := verifyOrHang(t, func() error { _, err := bundle.Verify(context.Background(), dir, v); return err })
			var be *bundle.Error
			if !errors.As(err, &be) || !errors.Is(err, tc.wantKind) || be.File != tc.wantFile {
				t.Fatalf("Verify = %v\nwant kind %q naming %q", err, tc.wantKind, tc.wantFile)
			}
			if strings.Contains(err.Error(), "host secret") {
				t.Fatalf("the error shows the linked host file: %v", err)
			}
		})
	}
}

// inotifyOpens counts, per name, the opens of files in dir while f runs.
func inotifyOpens(t *testing.T, dir string, f func()) map[string]int {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	f()
	opens := map[string]int{}
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, syscall.EAGAIN) || n <= 0 {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)], "\x00"))
			if ev.Mask&unix.IN_ISDIR == 0 {
				opens[name]++
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
	return opens
}

// What verify parses must be what it hashed: each file is opened once, so
// a file changed between a hash and a parse (swapped by a writer racing
// the verifier) cannot be signed as one content and read as another.
// Counted by the kernel (inotify), not by the code under test.
func TestVerifyReadsEachFileOnce(t *testing.T) {
	_, v, _ := testKeys(t)
	dir := sealed(t)
	var ver *bundle.Verified
	var err error
	opens := inotifyOpens(t, dir, func() { ver, err = bundle.Verify(context.Background(), dir, v) })
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{evidence.RunFile, evidence.ResultsFile, bundle.SumsFile} {
		if opens[f] != 1 {
			t.Errorf("%s opened %d times during Verify, want once (opens: %v)", f, opens[f], opens)
		}
	}
	if len(ver.Results) == 0 || ver.Run.ID == "" {
		t.Fatalf("verified nothing: %+v", ver)
	}
}

// An archive is read once as a stream: a link, a FIFO or an oversize entry
// where evidence should be is refused without extracting anything.
func TestVerifyArchiveRefusesHostileEntries(t *testing.T) {
	_, v, _ := testKeys(t)
	entry := func(h tar.Header, body []byte) []byte {
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		tw := tar.NewWriter(gz)
		h.Mode = 0o644
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write(body)
		// Left unclosed on purpose for the oversize case: the header
		// claims more than the stream holds.
		_ = tw.Flush()
		_ = gz.Close()
		return buf.Bytes()
	}
	cases := []struct {
		name     string
		data     []byte
		wantKind error
	}{
		{"results.json a symlink", entry(tar.Header{Name: "run-1/results.json", Typeflag: tar.TypeSymlink, Linkname: "/etc/shadow"}, nil), bundle.ErrUnsafePath},
		{"results.json a FIFO", entry(tar.Header{Name: "run-1/results.json", Typeflag: tar.TypeFifo}, nil), bundle.ErrUnsafePath},
		{"results.json a hard link", entry(tar.Header{Name: "run-1/results.json", Typeflag: tar.TypeLink, Linkname: "run-1/run.json"}, nil), bundle.ErrUnsafePath},
		{"results.json claims a terabyte", entry(tar.Header{Name: "run-1/results.json", Typeflag: tar.TypeReg, Size: 1 << 40}, []byte("{")), bundle.ErrTooLarge},
		{"a trace claims more than the limit", entry(tar.Header{Name: "run-1/traces/x.jsonl", Typeflag: tar.TypeReg, Size: bundle.DefaultLimits.MaxFileBytes + 1}, nil), bundle.ErrTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "run-1.tar.gz")
			if err := os.WriteFile(p, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := bundle.VerifyArchive(context.Background(), p, v)
			if !errors.Is(err, tc.wantKind) {
				t.Fatalf("VerifyArchive = %v, want %v", err, tc.wantKind)
			}
		})
	}
	t.Run("the archive path is a FIFO", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "run-1.tar.gz")
		if err := unix.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
		err := verifyOrHang(t, func() error { _, err := bundle.VerifyArchive(context.Background(), p, v); return err })
		if !errors.Is(err, bundle.ErrUnsafePath) {
			t.Fatalf("VerifyArchive = %v, want %v", err, bundle.ErrUnsafePath)
		}
	})
}

// A sealed archive still verifies, read as a stream.
func TestVerifyArchiveRoundTrip(t *testing.T) {
	_, v, _ := testKeys(t)
	dir := sealed(t)
	p := filepath.Join(t.TempDir(), "run-1.tar.gz")
	var buf bytes.Buffer
	if err := bundle.Archive(dir, &buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ver, err := bundle.VerifyArchive(context.Background(), p, v)
	if err != nil || ver.Dir != p || len(ver.Files) == 0 {
		t.Fatalf("VerifyArchive = %+v, %v", ver, err)
	}
}
