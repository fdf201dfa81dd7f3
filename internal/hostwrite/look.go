package hostwrite

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
)

// Look says whether something is at rel below under (followed by no
// link) and whether it was made after since: what the harness notes when
// it learns of a place, before the sandbox is gone. Nothing there is not
// an error; a place that cannot be reached is.
func Look(under, rel string, since time.Time) (exists, made bool, err error) {
	parent, base, err := openPlace(under, rel, since)
	if err != nil {
		return false, false, notThere(err)
	}
	defer parent.Close()
	var st unix.Statx_t
	if err := unix.Statx(parent.Fd(), base, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE|unix.STATX_BTIME, &st); err != nil {
		return false, false, notThere(err)
	}
	return true, Write{Since: since}.made(&st), nil
}

func notThere(err error) error {
	if absent(err) {
		return nil
	}
	return err
}

// absent says an error means nothing can be at the place: no such entry,
// or a file where a folder on the way would be (a path through a bound
// file such as /etc/hosts, which a mount table lists as writable).
func absent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)
}

// openParent opens the folder dir below root ("" is root itself). A link
// on the way is an error, never "nothing there": the sandbox may have
// swapped a folder for one to hide what it holds.
func openParent(root *untrusted.Dir, dir string) (*untrusted.Dir, error) {
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		return root.Sub(".")
	}
	d, err := root.Sub(dir)
	if err == nil || !errors.Is(err, unix.ENOTDIR) {
		return d, err
	}
	// O_DIRECTORY|O_NOFOLLOW says ENOTDIR for a link too: tell them apart.
	for p := dir; p != "." && p != ""; p = path.Dir(p) {
		if fi, lerr := root.Lstat(p); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s/%s is a link: %w", root.Name(), p, unix.ELOOP)
		}
	}
	return nil, err
}
