package untrusted

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"golang.org/x/sys/unix"
)

// Lchown gives the entry name (a link itself, never what it points at) to
// uid and gid, through a path descriptor so the entry checked is the entry
// changed. A non-folder with more than one name is left alone (skipped,
// no error): a hard link someone made to a file that is not theirs must
// not hand that file over.
func (d *Dir) Lchown(name string, uid, gid int) error {
	if err := check(name); err != nil {
		return &fs.PathError{Op: "chown", Path: d.join(name), Err: err}
	}
	fd, err := openat2(d.Fd(), name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0, resolve)
	if err != nil {
		return &fs.PathError{Op: "chown", Path: d.join(name), Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &fs.PathError{Op: "chown", Path: d.join(name), Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Nlink > 1 {
		return nil
	}
	if err := unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "chown", Path: d.join(name), Err: err}
	}
	return nil
}

// ChownTree gives the folder or file at p (an absolute path with no
// symlink on the way) to uid and gid and, when whole, everything below it:
// no link followed, no other filesystem entered, within lim (Lchown's
// rule on hard links applies to each). A p that does not exist is no error.
func ChownTree(ctx context.Context, p string, uid, gid int, whole bool, lim Limits) error {
	parent, err := OpenDir(path.Dir(p))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer parent.Close()
	base := path.Base(p)
	if err := parent.Lchown(base, uid, gid); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	fi, err := parent.Lstat(base)
	if err != nil || !fi.IsDir() || !whole {
		return err
	}
	d, err := parent.Sub(base)
	if err != nil {
		return err
	}
	defer d.Close()
	err = d.Walk(ctx, lim, func(in *Dir, e Entry) error {
		return in.Lchown(path.Base(e.Path), uid, gid)
	})
	if err != nil {
		return fmt.Errorf("chown %s: %w", p, err)
	}
	return nil
}
