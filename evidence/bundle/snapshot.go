package bundle

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
)

// snapshot is a bundle's files, each read exactly once, before anything is
// checked: every file's sha256, and the bytes of the few files verification
// parses (run.json, results.json, SHA256SUMS, attestations). What is parsed
// is what was hashed: a file changed between two reads cannot be signed
// as one content and read as another, because there is no second read.
type snapshot struct {
	files   map[string]snapFile
	paths   []string // evidence files, sorted (not SHA256SUMS, not attestations)
	attest  []string // attestation files, sorted
	hasSums bool
}

type snapFile struct {
	sha256 string
	data   []byte // metadata files only
}

// metadata reports whether verification parses rel (so it is kept whole,
// bounded by maxMetadataSize).
func metadata(rel string) bool {
	return rel == evidence.RunFile || rel == evidence.ResultsFile || rel == SumsFile || strings.HasPrefix(rel, AttestDir+"/")
}

// data returns rel's bytes, ErrMissingFile when the bundle has no such file.
func (s *snapshot) data(rel string) ([]byte, error) {
	f, ok := s.files[rel]
	if !ok {
		return nil, fail(ErrMissingFile, rel, "", nil)
	}
	return f.data, nil
}

// add records one regular file read from r (size as its descriptor or
// header says), within the limits still left in *budget.
func (s *snapshot) add(ctx context.Context, rel string, r io.Reader, size int64, lim Limits, budget *int64) error {
	if err := checkRel(rel); err != nil {
		return fail(ErrUnsafePath, rel, "", err)
	}
	if _, dup := s.files[rel]; dup {
		return failf(ErrMalformed, rel, "", "listed twice")
	}
	if len(s.files) >= lim.MaxFiles {
		return failf(ErrTooLarge, rel, "", "more than %d files", lim.MaxFiles)
	}
	max := min(lim.MaxFileBytes, *budget)
	if metadata(rel) {
		max = min(max, maxMetadataSize)
	}
	// The size is known before reading: a sparse file claiming exabytes is
	// refused without a byte read.
	if size > max {
		return failf(ErrTooLarge, rel, "", "%d bytes, more than the %d allowed", size, max)
	}
	h := sha256.New()
	var keep []byte
	var w io.Writer = h
	if metadata(rel) {
		keep = make([]byte, 0, size)
		w = io.MultiWriter(h, appender{&keep})
	}
	n, err := io.Copy(w, io.LimitReader(ctxReader{ctx, r}, max+1))
	*budget -= n
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("bundle: read %s: %w", rel, ctx.Err())
		}
		return fail(ErrMalformed, rel, "", err)
	}
	if n > max {
		return failf(ErrTooLarge, rel, "", "more than the %d bytes allowed", max)
	}
	s.files[rel] = snapFile{sha256: hex.EncodeToString(h.Sum(nil)), data: keep}
	switch {
	case rel == SumsFile:
		s.hasSums = true
	case strings.HasPrefix(rel, AttestDir+"/"):
		s.attest = append(s.attest, rel)
	default:
		s.paths = append(s.paths, rel)
	}
	return nil
}

type appender struct{ b *[]byte }

func (a appender) Write(p []byte) (int, error) { *a.b = append(*a.b, p...); return len(p), nil }

// ctxReader ends a long read when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// readFolder reads every file of the bundle folder dir once, in lexical
// order, with no link followed anywhere below dir (the path the caller
// names may hold links: it is the caller's). Anything but a folder or a
// regular file (a symlink, a FIFO, a device, a socket) is refused before it
// is opened; a file swapped for one after the listing is refused when
// opened (non-blocking, fstat'ed). Counts and sizes are bounded by lim.
func readFolder(ctx context.Context, dir string, lim Limits) (*snapshot, error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	root, err := untrusted.OpenDir(abs)
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	defer root.Close()
	s := &snapshot{files: map[string]snapFile{}}
	budget := lim.MaxTotal
	walkLim := untrusted.Limits{Entries: lim.MaxFiles * 2, FileSize: lim.MaxFileBytes, Bytes: lim.MaxTotal}
	err = root.Walk(ctx, walkLim, func(d *untrusted.Dir, e untrusted.Entry) error {
		switch {
		case e.Mode.IsDir():
			return nil
		case !e.Mode.IsRegular():
			return failf(ErrUnsafePath, e.Path, "", "not a regular file (%s)", e.Mode.Type())
		}
		f, err := d.Open(path.Base(e.Path))
		if errors.Is(err, untrusted.ErrNotRegular) || errors.Is(err, syscall.ELOOP) {
			return failf(ErrUnsafePath, e.Path, "", "not a regular file when opened")
		}
		if err != nil {
			return fail(ErrMalformed, e.Path, "", err)
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return fail(ErrMalformed, e.Path, "", err)
		}
		return s.add(ctx, e.Path, f, st.Size(), lim, &budget)
	})
	var be *Error
	switch {
	case err == nil:
		return s, nil
	case errors.As(err, &be):
		return nil, err
	case errors.Is(err, untrusted.ErrTooLarge):
		return nil, fail(ErrTooLarge, "", "", err)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("bundle: verify: %w", ctx.Err())
	}
	return nil, fail(ErrMalformed, "", "", err)
}

// readArchive reads a bundle archive (.tar.gz) once, as a stream: nothing
// is written to disk. Only folders and regular files under one top-level
// folder are accepted (no absolute paths, no "..", no links, devices or
// FIFOs), within lim. It returns the snapshot and the top folder's name.
func readArchive(ctx context.Context, r io.Reader, lim Limits) (*snapshot, string, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, "", fail(ErrMalformed, "", "", err)
	}
	tr := tar.NewReader(gz)
	s := &snapshot{files: map[string]snapFile{}}
	budget := lim.MaxTotal
	var top string
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			return nil, "", fmt.Errorf("bundle: verify: %w", err)
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, "", fail(ErrMalformed, "", "", err)
		}
		if n >= 2*lim.MaxFiles {
			return nil, "", failf(ErrTooLarge, "", "", "more than %d entries", 2*lim.MaxFiles)
		}
		name := strings.TrimSuffix(hdr.Name, "/")
		if err := checkRel(name); err != nil {
			return nil, "", fail(ErrUnsafePath, hdr.Name, "", err)
		}
		first, rel, _ := strings.Cut(name, "/")
		if top == "" {
			top = first
		}
		if first != top {
			return nil, "", failf(ErrUnsafePath, hdr.Name, "", "outside the single top-level folder %q", top)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			continue
		case tar.TypeReg:
		default:
			return nil, "", failf(ErrUnsafePath, hdr.Name, "", "entry type %q not allowed", hdr.Typeflag)
		}
		if rel == "" {
			return nil, "", failf(ErrUnsafePath, hdr.Name, "", "a file outside the bundle folder")
		}
		if err := s.add(ctx, rel, tr, hdr.Size, lim, &budget); err != nil {
			return nil, "", err
		}
	}
	if top == "" {
		return nil, "", failf(ErrMalformed, "", "", "archive holds no bundle folder")
	}
	return s, top, nil
}
