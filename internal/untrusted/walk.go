package untrusted

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"time"

	"golang.org/x/sys/unix"
)

// Limits bound a walk of a hostile tree. A zero field takes the default.
type Limits struct {
	Entries  int   // entries visited, folders included (default 100,000)
	Depth    int   // folders below the root (default 64)
	Bytes    int64 // bytes read from all files together (default 1 GiB)
	FileSize int64 // bytes read from one file (default 256 MiB)
}

// Effective is l with every zero field set to its default.
func (l Limits) Effective() Limits { return l.withDefaults() }

func (l Limits) withDefaults() Limits {
	if l.Entries <= 0 {
		l.Entries = 100_000
	}
	if l.Depth <= 0 {
		l.Depth = 64
	}
	if l.Bytes <= 0 {
		l.Bytes = 1 << 30
	}
	if l.FileSize <= 0 {
		l.FileSize = 256 << 20
	}
	return l
}

// Entry is one name found by Walk: its kind is from lstat (a link is a
// link, never what it points at).
type Entry struct {
	Path    string      // slash path relative to the walk's root
	Mode    fs.FileMode // type and permission bits
	Size    int64       // as lstat says; not trusted for reading
	Link    string      // a symlink's target, as text
	Dev     uint64      // the device the entry is on
	ModTime time.Time   // as lstat says
}

// Walk visits every entry below d in lexical order, depth first, without
// following any link or crossing into another filesystem (an entry on
// another device is reported, not entered). It stops with ErrTooLarge at
// the first bound passed, and with ctx's error when ctx ends. fn's error
// stops the walk; fs.SkipDir from fn on a folder skips it.
func (d *Dir) Walk(ctx context.Context, lim Limits, fn func(*Dir, Entry) error) error {
	lim = lim.withDefaults()
	var st unix.Stat_t
	if err := unix.Fstat(d.Fd(), &st); err != nil {
		return err
	}
	w := &walker{ctx: ctx, lim: lim, fn: fn, dev: st.Dev}
	return w.dir(d, "", 0)
}

type walker struct {
	ctx     context.Context
	lim     Limits
	fn      func(*Dir, Entry) error
	dev     uint64
	entries int
}

func (w *walker) dir(d *Dir, rel string, depth int) error {
	if depth > w.lim.Depth {
		return fmt.Errorf("%s: %w: more than %d folders deep", d.name, ErrTooLarge, w.lim.Depth)
	}
	names, err := d.names(w.lim.Entries - w.entries)
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, n := range names {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		if w.entries++; w.entries > w.lim.Entries {
			return fmt.Errorf("%s: %w: more than %d entries", d.name, ErrTooLarge, w.lim.Entries)
		}
		var st unix.Stat_t
		if err := unix.Fstatat(d.Fd(), n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // removed while we looked: the writer is still at work
			}
			return &fs.PathError{Op: "lstat", Path: d.join(n), Err: err}
		}
		e := Entry{Path: join(rel, n), Mode: fileInfo(n, &st).Mode(), Size: st.Size, Dev: st.Dev, ModTime: time.Unix(st.Mtim.Unix())}
		if e.Mode&fs.ModeSymlink != 0 {
			buf := make([]byte, 4096)
			if k, err := unix.Readlinkat(d.Fd(), n, buf); err == nil {
				e.Link = string(buf[:k])
			}
		}
		err := w.fn(d, e)
		if e.Mode.IsDir() && errors.Is(err, fs.SkipDir) {
			continue
		}
		if err != nil {
			return err
		}
		if !e.Mode.IsDir() || st.Dev != w.dev {
			continue
		}
		sub, err := d.Sub(n)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EXDEV) {
				continue // swapped for something else since the lstat: not followed
			}
			return err
		}
		err = w.dir(sub, e.Path, depth+1)
		sub.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func join(rel, n string) string {
	if rel == "" {
		return n
	}
	return rel + "/" + n
}

// Hasher reads files for a walk within its byte bounds: one per walk.
type Hasher struct {
	lim  Limits
	read int64
}

// NewHasher bounds the bytes read through it by lim (Bytes and FileSize).
func NewHasher(lim Limits) *Hasher { return &Hasher{lim: lim.withDefaults()} }

// Sum returns the sha256 (hex) of the regular file name in d, refusing
// anything that is not a regular file when opened, and any read past the
// bounds with ErrTooLarge.
func (h *Hasher) Sum(ctx context.Context, d *Dir, name string) (string, error) {
	f, err := d.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	left := min(h.lim.FileSize, h.lim.Bytes-h.read)
	sum := sha256.New()
	n, err := io.Copy(sum, io.LimitReader(ctxReader{ctx, f}, left+1))
	h.read += n
	if err != nil {
		return "", err
	}
	if n > left {
		return "", fmt.Errorf("%s: %w: more than %d bytes to read", f.Name(), ErrTooLarge, left)
	}
	return hex.EncodeToString(sum.Sum(nil)), nil
}

// WithContext returns r, whose reads fail with ctx's error once ctx ends:
// a long copy from or into a hostile folder stops with its context.
func WithContext(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

// ctxReader ends a long read when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if len(p) > 1<<20 {
		p = p[:1<<20]
	}
	return c.r.Read(p)
}

// fileInfo is an fs.FileInfo from a stat.
func fileInfo(name string, st *unix.Stat_t) fs.FileInfo {
	return statInfo{name: name, st: *st}
}

type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s statInfo) Name() string { return s.name }
func (s statInfo) Size() int64  { return s.st.Size }
func (s statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if s.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
func (s statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s statInfo) Sys() any           { return &s.st }
