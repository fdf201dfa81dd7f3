package agents

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
	"golang.org/x/sys/unix"
)

// ErrArchive means a tarball holds something the installer refuses to
// write: an entry outside the package, a link through which a later entry
// would be written, a hard link, a device, a FIFO, a setuid/setgid/sticky
// bit, or more entries or bytes than Limits allow.
var ErrArchive = errors.New("unsafe tarball")

// Limits bound one tarball's extraction. A zero field takes the default.
type Limits struct {
	Entries  int   // entries of any kind (default 100,000)
	Bytes    int64 // bytes of all regular files together (default 2 GiB)
	FileSize int64 // bytes of one regular file (default 1 GiB)
}

func (l Limits) withDefaults() Limits {
	if l.Entries <= 0 {
		l.Entries = 100_000
	}
	if l.Bytes <= 0 {
		l.Bytes = 2 << 30
	}
	if l.FileSize <= 0 {
		l.FileSize = 1 << 30
	}
	return l
}

// extract writes a gzipped npm tarball's entries into dst, dropping the
// first path element ("package/" by convention). Every name is resolved
// by the kernel below dst with no symlink in any component (untrusted), so
// a link made by an earlier entry is never passed through by a later one:
// the write fails instead. Links are made only as leaves whose target
// stays inside the package, lexically here and physically in checkLinks.
// Modes are never copied: files are 0644, or 0755 when the tarball set an
// executable bit, folders 0755, all set on the open descriptor (fchmod).
func extract(ctx context.Context, r io.Reader, dst *untrusted.Dir, lim Limits) error {
	lim = lim.withDefaults()
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("tarball: %w", err)
	}
	x := extractor{dst: dst, lim: lim, dirs: map[string]bool{}, isLink: map[string]bool{}}
	tr := tar.NewReader(gz)
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return x.checkLinks()
		}
		if err != nil {
			return fmt.Errorf("tarball: %w", err)
		}
		if n > lim.Entries {
			return fmt.Errorf("%w: more than %d entries", ErrArchive, lim.Entries)
		}
		if err := x.entry(hdr, tr); err != nil {
			return fmt.Errorf("tarball entry %q: %w", hdr.Name, err)
		}
	}
}

type extractor struct {
	dst    *untrusted.Dir
	lim    Limits
	total  int64
	dirs   map[string]bool // folders made and chmodded already
	links  []string        // symlinks made, checked at the end
	isLink map[string]bool
}

// throughLink names the link an entry would pass through or replace. It
// only makes the error clear: untrusted refuses such a write anyway.
func (x *extractor) throughLink(name string) error {
	for p := name; p != "." && p != "/"; p = path.Dir(p) {
		if x.isLink[p] {
			return fmt.Errorf("%w: passes through the symlink %q made by an earlier entry", ErrArchive, p)
		}
	}
	return nil
}

func (x *extractor) entry(hdr *tar.Header, r io.Reader) error {
	name, err := entryName(hdr)
	if err != nil || name == "" {
		return err
	}
	if err := x.throughLink(name); err != nil {
		return err
	}
	if hdr.Mode&(unix.S_ISUID|unix.S_ISGID|unix.S_ISVTX) != 0 {
		return fmt.Errorf("%w: mode %o has a setuid, setgid or sticky bit", ErrArchive, hdr.Mode)
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return x.mkdirAll(name)
	case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // old tar writers
		return x.file(name, hdr, r)
	case tar.TypeSymlink:
		return x.symlink(name, hdr.Linkname)
	case tar.TypeXGlobalHeader:
		return nil // PAX metadata for the whole archive, no file
	case tar.TypeLink:
		return fmt.Errorf("%w: hard link to %q", ErrArchive, hdr.Linkname)
	case tar.TypeChar, tar.TypeBlock:
		return fmt.Errorf("%w: device node", ErrArchive)
	case tar.TypeFifo:
		return fmt.Errorf("%w: FIFO", ErrArchive)
	}
	return fmt.Errorf("%w: entry type %q", ErrArchive, hdr.Typeflag)
}

// entryName is the entry's path inside the package ("" for the top folder
// itself). Absolute names and ".." anywhere are refused, not cleaned away.
func entryName(hdr *tar.Header) (string, error) {
	raw := hdr.Name
	if strings.HasPrefix(raw, "/") {
		return "", fmt.Errorf("%w: an absolute name leaves the package", ErrArchive)
	}
	for _, el := range strings.Split(raw, "/") {
		if el == ".." {
			return "", fmt.Errorf("%w: a \"..\" in the name leaves the package", ErrArchive)
		}
	}
	name := path.Clean(raw)
	if _, rest, ok := strings.Cut(name, "/"); ok {
		name = rest
	} else if hdr.Typeflag == tar.TypeDir || name == "." {
		return "", nil // the top folder ("package/")
	}
	return name, nil
}

// mkdirAll makes name and the folders above it, none through a link.
func (x *extractor) mkdirAll(name string) error {
	if name == "." || x.dirs[name] {
		return nil
	}
	if err := x.mkdirAll(path.Dir(name)); err != nil {
		return err
	}
	if err := x.dst.Mkdir(name, 0o755); err != nil {
		return err
	}
	sub, err := x.dst.Sub(name)
	if err != nil {
		return err
	}
	defer sub.Close()
	if err := unix.Fchmod(sub.Fd(), 0o755); err != nil { // readable by the sandbox user, whatever the umask
		return err
	}
	x.dirs[name] = true
	return nil
}

func (x *extractor) file(name string, hdr *tar.Header, r io.Reader) error {
	if hdr.Size > x.lim.FileSize {
		return fmt.Errorf("%w: %d bytes, more than %d for one file", ErrArchive, hdr.Size, x.lim.FileSize)
	}
	if x.total += hdr.Size; x.total > x.lim.Bytes {
		return fmt.Errorf("%w: more than %d bytes in all", ErrArchive, x.lim.Bytes)
	}
	if err := x.mkdirAll(path.Dir(name)); err != nil {
		return err
	}
	perm := untrustedPerm(hdr.Mode)
	f, err := x.dst.Create(name, perm) // O_EXCL, no link followed, fchmod
	if err != nil {
		return err
	}
	_, err = io.Copy(f, io.LimitReader(r, hdr.Size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// untrustedPerm makes files readable by everyone (the agent runs as an
// unprivileged user and reads them through a read-only bind) and keeps the
// executable bit where the package set it.
func untrustedPerm(mode int64) fs.FileMode {
	if mode&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

// symlink makes name a link to target when target, taken from the link's
// own folder, stays inside the package. Later entries cannot pass through
// it (untrusted refuses any link in a path); checkLinks then checks where
// it really leads.
func (x *extractor) symlink(name, target string) error {
	full := path.Join(path.Dir(name), target)
	if target == "" || path.IsAbs(target) || full == ".." || strings.HasPrefix(full, "../") {
		return fmt.Errorf("%w: symlink to %q leaves the package", ErrArchive, target)
	}
	if err := x.mkdirAll(path.Dir(name)); err != nil {
		return err
	}
	if err := x.dst.Symlink(target, name); err != nil {
		return err
	}
	x.links = append(x.links, name)
	x.isLink[name] = true
	return nil
}

// checkLinks resolves every link the tarball made as the kernel will when
// something follows it later (Node on the host for srt, the agent in its
// sandbox), refusing any that leaves the package on the way: a chain of
// links each lexically inside ("sub/l" -> "..", "m" -> "sub/l/../../x")
// can still climb out physically. A dangling link is left alone: nothing
// is written through it, and what it names does not exist in the package.
func (x *extractor) checkLinks() error {
	for _, name := range x.links {
		how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
		fd, err := unix.Openat2(x.dst.Fd(), name, &how)
		switch {
		case err == nil:
			unix.Close(fd)
		case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
		case errors.Is(err, unix.EXDEV):
			return fmt.Errorf("tarball symlink %q: %w: it leads out of the package", name, ErrArchive)
		default:
			return fmt.Errorf("tarball symlink %q: %w: %w", name, ErrArchive, err)
		}
	}
	return nil
}
