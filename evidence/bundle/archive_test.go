package bundle_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
)

func TestArchiveRoundTrip(t *testing.T) {
	_, v, _ := testKeys(t)
	dir := sealed(t)
	var a, b bytes.Buffer
	if err := bundle.Archive(dir, &a); err != nil {
		t.Fatal(err)
	}
	if err := bundle.Archive(dir, &b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("archiving the same bundle twice gave different bytes")
	}
	p := filepath.Join(t.TempDir(), "run-1.tar.gz")
	if err := os.WriteFile(p, a.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := bundle.VerifyArchive(context.Background(), p, v)
	if err != nil {
		t.Fatalf("VerifyArchive: %v", err)
	}
	if got.Run.ID != "run-1" || got.Dir != p {
		t.Fatalf("verified %q from %q", got.Run.ID, got.Dir)
	}
}

// tgz builds an archive from raw headers, to make hostile ones.
func tgz(t *testing.T, entries ...tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, h := range entries {
		body := bytes.Repeat([]byte("x"), int(h.Size))
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
			body = nil
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		tw.Write(body)
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func TestExtractRefusesUnsafe(t *testing.T) {
	reg := func(name string, size int64) tar.Header {
		return tar.Header{Name: name, Size: size, Mode: 0o644, Typeflag: tar.TypeReg}
	}
	lim := bundle.Limits{MaxFiles: 10, MaxFileBytes: 100, MaxTotal: 150}
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"absolute path", tgz(t, reg("/etc/x", 1)), bundle.ErrUnsafePath},
		{"dot-dot", tgz(t, reg("run/../../x", 1)), bundle.ErrUnsafePath},
		{"leading dot-dot", tgz(t, reg("../x", 1)), bundle.ErrUnsafePath},
		{"symlink", tgz(t, tar.Header{Name: "run/l", Linkname: "/etc", Typeflag: tar.TypeSymlink}), bundle.ErrUnsafePath},
		{"hard link", tgz(t, tar.Header{Name: "run/l", Linkname: "run/a", Typeflag: tar.TypeLink}), bundle.ErrUnsafePath},
		{"two top folders", tgz(t, reg("a/x", 1), reg("b/x", 1)), bundle.ErrUnsafePath},
		{"file too big", tgz(t, reg("run/x", 101)), bundle.ErrTooLarge},
		{"total too big", tgz(t, reg("run/x", 100), reg("run/y", 100)), bundle.ErrTooLarge},
		{"too many files", tgz(t, reg("run/1", 1), reg("run/2", 1), reg("run/3", 1), reg("run/4", 1),
			reg("run/5", 1), reg("run/6", 1), reg("run/7", 1), reg("run/8", 1), reg("run/9", 1),
			reg("run/10", 1), reg("run/11", 1)), bundle.ErrTooLarge},
		{"not gzip", []byte("plain text"), bundle.ErrMalformed},
		{"empty archive", tgz(t), bundle.ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dest := t.TempDir()
			_, err := bundle.Extract(context.Background(), bytes.NewReader(tc.data), dest, lim)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Extract = %v, want %v", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(dest), "x")); err == nil {
				t.Fatal("a file escaped the destination")
			}
		})
	}
}
