package bundle

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Limits cap what extracting an archive may write.
type Limits struct {
	MaxFiles     int
	MaxFileBytes int64
	MaxTotal     int64
}

// DefaultLimits fit a full run with generous traces.
var DefaultLimits = Limits{MaxFiles: 100_000, MaxFileBytes: 1 << 30, MaxTotal: 4 << 30}

// Archive writes a sealed bundle folder as a .tar.gz whose single top-level
// folder is the bundle's name. Entries are sorted with fixed metadata so the
// same bundle always gives the same archive.
func Archive(dir string, w io.Writer) error {
	files, attest, hasSums, err := scan(dir)
	if err != nil {
		return fmt.Errorf("bundle: archive: %w", err)
	}
	if hasSums {
		files = append(files, SumsFile)
	}
	files = append(files, attest...)
	top := filepath.Base(filepath.Clean(dir))
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, rel := range files {
		if err := addFile(tw, dir, top, rel); err != nil {
			return fmt.Errorf("bundle: archive %s: %w", rel, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("bundle: archive: %w", err)
	}
	return gz.Close()
}

func addFile(tw *tar.Writer, dir, top, rel string) error {
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	hdr := &tar.Header{Name: top + "/" + rel, Mode: 0o644, Size: st.Size(),
		ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

// Extract unpacks a bundle archive into dest (which must exist) and returns
// the bundle folder. Only regular files and folders under one top-level
// folder are accepted: no absolute paths, no "..", no links or devices, and
// the counts and sizes in lim.
func Extract(ctx context.Context, r io.Reader, dest string, lim Limits) (string, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return "", fail(ErrMalformed, "", "", err)
	}
	tr := tar.NewReader(gz)
	var top string
	var total int64
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("bundle: extract: %w", err)
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fail(ErrMalformed, "", "", err)
		}
		if n >= lim.MaxFiles {
			return "", failf(ErrTooLarge, "", "", "more than %d entries", lim.MaxFiles)
		}
		name := strings.TrimSuffix(hdr.Name, "/")
		if err := checkRel(name); err != nil {
			return "", fail(ErrUnsafePath, hdr.Name, "", err)
		}
		first, _, _ := strings.Cut(name, "/")
		if top == "" {
			top = first
		}
		if first != top || first == ".." {
			return "", failf(ErrUnsafePath, hdr.Name, "", "outside the single top-level folder %q", top)
		}
		target := filepath.Join(dest, filepath.FromSlash(name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return "", fmt.Errorf("bundle: extract: %w", err)
			}
			continue
		case tar.TypeReg:
		default:
			return "", failf(ErrUnsafePath, hdr.Name, "", "entry type %q not allowed", hdr.Typeflag)
		}
		if hdr.Size > lim.MaxFileBytes || total+hdr.Size > lim.MaxTotal {
			return "", failf(ErrTooLarge, hdr.Name, "", "%d bytes", hdr.Size)
		}
		total += hdr.Size
		if err := writeEntry(target, tr, hdr.Size); err != nil {
			return "", fmt.Errorf("bundle: extract %s: %w", hdr.Name, err)
		}
	}
	if top == "" || path.Base(top) != top {
		return "", failf(ErrMalformed, "", "", "archive holds no bundle folder")
	}
	return filepath.Join(dest, top), nil
}

// writeEntry creates a new file (never overwriting: a duplicate entry is an
// error) with exactly size bytes.
func writeEntry(target string, r io.Reader, size int64) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, r, size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// VerifyArchive verifies a .tar.gz bundle as Verify does a folder, reading
// the archive once as a stream (readArchive: regular files under one top
// folder only, bounded by DefaultLimits) with nothing written to disk.
// Verified.Dir names the archive.
func VerifyArchive(ctx context.Context, archivePath string, v Verifier) (*Verified, error) {
	// Non-blocking: a FIFO in the archive's place must not hang verify.
	f, err := os.OpenFile(archivePath, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, failf(ErrUnsafePath, "", "", "%s is not a regular file", archivePath)
	}
	s, top, err := readArchive(ctx, f, DefaultLimits)
	if err != nil {
		return nil, err
	}
	if err := checkName(top); err != nil {
		return nil, err
	}
	return verifySnapshot(ctx, s, archivePath, v)
}
