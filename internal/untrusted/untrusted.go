// Package untrusted opens, reads, writes and walks folders whose contents
// hostile code could have written: a sandbox's work folder, a repository
// copy an agent edited, a place on the host a leaky sandbox reached, an
// archive from a package registry being unpacked.
//
// Gatehouse runs as root next to that code, so every path below a Dir is
// resolved by the kernel (openat2) with no symlink in any component, never
// above the Dir and with no /proc magic links: a link planted anywhere on
// the way fails the call instead of redirecting a root-owned read or write.
// Files are opened non-blocking and must be regular files (a FIFO or a
// device node planted in place of a report is refused, not opened), reads
// are bounded, and writes go to a fresh name that is renamed over the old
// entry, so a FIFO or link already there is replaced, never written
// through.
package untrusted

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrNotRegular means a name that should be a regular file is something
// else: a FIFO, a device node, a socket, a folder or a symlink.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge means a file or a tree is past the bound the caller set.
var ErrTooLarge = errors.New("past its bound")

// resolve is how every path below a Dir is resolved.
const resolve = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// Dir is an open folder. Names given to its methods are relative slash
// paths; none may contain a symlink, "..", or start with "/".
type Dir struct {
	f    *os.File
	name string // for messages only
}

// OpenDir opens the folder at p (an absolute path) with no symlink in any
// of its components, so a folder the harness names cannot be swapped for a
// link by whoever can write its parent.
func OpenDir(p string) (*Dir, error) {
	if !path.IsAbs(p) {
		return nil, &fs.PathError{Op: "open", Path: p, Err: errors.New("not an absolute path")}
	}
	fd, err := openat2(unix.AT_FDCWD, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0, unix.RESOLVE_NO_SYMLINKS|unix.RESOLVE_NO_MAGICLINKS)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	return &Dir{f: os.NewFile(uintptr(fd), p), name: p}, nil
}

// Name is the path the Dir was opened with (or derived from).
func (d *Dir) Name() string { return d.name }

// Close releases the folder.
func (d *Dir) Close() error { return d.f.Close() }

// Fd is the folder's descriptor, for *at calls the package does not wrap.
func (d *Dir) Fd() int { return int(d.f.Fd()) }

func (d *Dir) join(name string) string { return d.name + "/" + name }

// check refuses names that are not plain relative paths.
func check(name string) error {
	if name == "" || strings.HasPrefix(name, "/") || path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") {
		return fmt.Errorf("%q is not a clean relative path", name)
	}
	return nil
}

func (d *Dir) openat(name string, flags int, mode uint32) (int, error) {
	if err := check(name); err != nil {
		return -1, &fs.PathError{Op: "open", Path: d.join(name), Err: err}
	}
	fd, err := openat2(d.Fd(), name, flags|unix.O_CLOEXEC, mode, resolve)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: d.join(name), Err: err}
	}
	return fd, nil
}

func openat2(dirfd int, name string, flags int, mode uint32, res uint64) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags), Mode: uint64(mode), Resolve: res}
	for {
		fd, err := unix.Openat2(dirfd, name, &how)
		if err == unix.EINTR || err == unix.EAGAIN { // EAGAIN: a rename raced the lookup
			continue
		}
		return fd, err
	}
}

// Sub opens the folder name below d ("." opens d again, with an offset of
// its own for listing).
func (d *Dir) Sub(name string) (*Dir, error) {
	fd, err := d.openat(name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	sub := d.join(name)
	if name == "." {
		sub = d.name
	}
	return &Dir{f: os.NewFile(uintptr(fd), sub), name: sub}, nil
}

// Open opens name for reading. It must be a regular file: the open never
// blocks (O_NONBLOCK, so a FIFO cannot hang the harness) and anything but
// a regular file is closed again and refused with ErrNotRegular.
func (d *Dir) Open(name string) (*os.File, error) {
	fd, err := d.openat(name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "fstat", Path: d.join(name), Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: d.join(name), Err: ErrNotRegular}
	}
	return os.NewFile(uintptr(fd), d.join(name)), nil
}

// ReadFile reads the regular file name, at most max bytes: a longer file
// (or a sparse one claiming exabytes) is refused with ErrTooLarge after
// max+1 bytes were read, whatever its size says.
func (d *Dir) ReadFile(name string, max int64) ([]byte, error) {
	f, err := d.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, max)
}

// ReadAll reads r to its end, at most max bytes; ErrTooLarge past that.
func ReadAll(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)
	}
	return b, nil
}

// Lstat describes name itself, never what a link points at.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) {
	if err := check(name); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: d.join(name), Err: err}
	}
	dir, base, err := d.parent(name)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	var st unix.Stat_t
	if err := unix.Fstatat(dir.Fd(), base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: d.join(name), Err: err}
	}
	return fileInfo(base, &st), nil
}

// parent opens the folder holding name, and returns name's last element.
func (d *Dir) parent(name string) (*Dir, string, error) {
	dir, base := path.Split(name)
	if dir == "" {
		p, err := d.Sub(".")
		return p, base, err
	}
	p, err := d.Sub(strings.TrimSuffix(dir, "/"))
	return p, base, err
}

// Mkdir makes the folder name (its parent must exist). An existing folder
// is fine; an existing anything else is an error.
func (d *Dir) Mkdir(name string, perm fs.FileMode) error {
	if err := check(name); err != nil {
		return &fs.PathError{Op: "mkdir", Path: d.join(name), Err: err}
	}
	dir, base, err := d.parent(name)
	if err != nil {
		return err
	}
	defer dir.Close()
	err = unix.Mkdirat(dir.Fd(), base, uint32(perm.Perm()))
	if errors.Is(err, unix.EEXIST) {
		var st unix.Stat_t
		if serr := unix.Fstatat(dir.Fd(), base, &st, unix.AT_SYMLINK_NOFOLLOW); serr == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return nil
		}
	}
	if err != nil {
		return &fs.PathError{Op: "mkdir", Path: d.join(name), Err: err}
	}
	return nil
}

// MkdirAll makes name and every missing folder above it, following no link.
func (d *Dir) MkdirAll(name string, perm fs.FileMode) error {
	if err := check(name); err != nil {
		return &fs.PathError{Op: "mkdir", Path: d.join(name), Err: err}
	}
	parts := strings.Split(name, "/")
	for i := range parts {
		if err := d.Mkdir(strings.Join(parts[:i+1], "/"), perm); err != nil {
			return err
		}
	}
	return nil
}

// Create makes a new regular file name, which must not exist (O_EXCL: an
// entry already there, link or FIFO included, is an error, never reused).
func (d *Dir) Create(name string, perm fs.FileMode) (*os.File, error) {
	fd, err := d.openat(name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, uint32(perm.Perm()))
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), d.join(name))
	if err := f.Chmod(perm.Perm()); err != nil { // the umask must not take bits away
		f.Close()
		return nil, err
	}
	return f, nil
}

// WriteFile writes r to name through a fresh file renamed over it: what
// was at name before (a file, a planted link, a FIFO) is replaced as an
// entry, never opened or written through.
func (d *Dir) WriteFile(name string, r io.Reader, perm fs.FileMode) error {
	return d.WriteFileWith(name, r, perm, nil)
}

// WriteFileWith is WriteFile with a last step on the new file before it
// takes name's place (prepare may be nil): changes made through its
// descriptor, such as a chown, reach exactly the file written, whatever
// the sandbox does to name meanwhile.
func (d *Dir) WriteFileWith(name string, r io.Reader, perm fs.FileMode, prepare func(*os.File) error) error {
	if err := check(name); err != nil {
		return &fs.PathError{Op: "write", Path: d.join(name), Err: err}
	}
	dir, base, err := d.parent(name)
	if err != nil {
		return err
	}
	defer dir.Close()
	var tmp string
	var f *os.File
	for i := 0; ; i++ {
		// A random name: one the sandbox could guess, it could take first
		// (every guess refused with EEXIST would stop the write).
		tmp = ".gh-" + rand.Text()
		f, err = dir.Create(tmp, perm)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || i > 8 {
			return err
		}
	}
	_, err = io.Copy(f, r)
	if err == nil && prepare != nil {
		err = prepare(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dir.Fd(), tmp, dir.Fd(), base)
	}
	if err != nil {
		unix.Unlinkat(dir.Fd(), tmp, 0)
		return &fs.PathError{Op: "write", Path: d.join(name), Err: err}
	}
	return nil
}

// Symlink makes name a symlink to target. The link is made, never
// followed; whether target stays inside is the caller's decision.
func (d *Dir) Symlink(target, name string) error {
	if err := check(name); err != nil {
		return &fs.PathError{Op: "symlink", Path: d.join(name), Err: err}
	}
	dir, base, err := d.parent(name)
	if err != nil {
		return err
	}
	defer dir.Close()
	if err := unix.Symlinkat(target, dir.Fd(), base); err != nil {
		return &fs.PathError{Op: "symlink", Path: d.join(name), Err: err}
	}
	return nil
}

// Remove removes the entry name (a file, link, FIFO or empty folder)
// without following it. A missing entry is not an error.
func (d *Dir) Remove(name string) error {
	if err := check(name); err != nil {
		return &fs.PathError{Op: "remove", Path: d.join(name), Err: err}
	}
	dir, base, err := d.parent(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer dir.Close()
	err = unix.Unlinkat(dir.Fd(), base, 0)
	if errors.Is(err, unix.EISDIR) {
		err = unix.Unlinkat(dir.Fd(), base, unix.AT_REMOVEDIR)
	}
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "remove", Path: d.join(name), Err: err}
	}
	return nil
}

// RemoveAll removes name and everything below it, descending through
// descriptors so that no link below is followed. A missing name is not an
// error.
func (d *Dir) RemoveAll(name string) error { return d.removeAll(name, 0) }

// maxRemoveDepth bounds how deep RemoveAll descends: each level holds a
// descriptor, and a hostile tree can be made deeper than any path.
const maxRemoveDepth = 256

func (d *Dir) removeAll(name string, depth int) error {
	if depth > maxRemoveDepth {
		return fmt.Errorf("%s: %w: more than %d folders deep", d.join(name), ErrTooLarge, maxRemoveDepth)
	}
	fi, err := d.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		sub, err := d.Sub(name)
		if err != nil {
			return err
		}
		names, err := sub.names(-1)
		if err == nil {
			for _, n := range names {
				if err = sub.removeAll(n, depth+1); err != nil {
					break
				}
			}
		}
		sub.Close()
		if err != nil {
			return err
		}
	}
	return d.Remove(name)
}

// names lists the folder's entries, at most max of them (max < 0: all).
func (d *Dir) names(max int) ([]string, error) {
	f, err := d.Sub(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	for {
		n := 256
		if max >= 0 && max-len(out)+1 < n {
			n = max - len(out) + 1
		}
		batch, err := f.f.Readdirnames(n)
		out = append(out, batch...)
		if max >= 0 && len(out) > max {
			return out[:max], fmt.Errorf("%s: %w: more than %d entries", d.name, ErrTooLarge, max)
		}
		if errors.Is(err, io.EOF) || (err == nil && len(batch) == 0) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}
