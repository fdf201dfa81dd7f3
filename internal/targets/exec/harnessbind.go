package exec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"

	"golang.org/x/sys/unix"
)

// Bind is a folder of the harness's own bound read-write into the
// wrapper's view of the host, where the wrapper expects a shared host
// folder: srt's TMPDIR /tmp/claude (internal/targets/realwrap) is a folder of the
// run's, not the host's, in every srt session.
type Bind struct {
	Host   string // a folder the harness made (internal/scratch)
	Inside string // an absolute path on the host, the mount point
}

// MountPoint makes b.Inside on the host as an empty folder owned by
// root, mode 0755, or checks the one there: a real folder (a link is
// never followed) owned by root. It is never chmodded, written or read:
// only mounted over, in the wrapper's own mount namespace. Anything else
// at that path (a link planted there, another user's folder) is refused.
func MountPoint(b Bind) error {
	if !path.IsAbs(b.Inside) || path.Clean(b.Inside) != b.Inside || b.Inside == "/" {
		return fmt.Errorf("harness bind: %q is not a clean absolute path", b.Inside)
	}
	err := os.Mkdir(b.Inside, 0o755) // never follows a link at b.Inside
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("mount point %s: %w", b.Inside, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(b.Inside, &st); err != nil {
		return fmt.Errorf("mount point %s: %w", b.Inside, err)
	}
	return ownFolder(b.Inside, &st)
}

// ownFolder refuses a mount point that is not a real folder owned by root.
func ownFolder(p string, st *unix.Stat_t) error {
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return fmt.Errorf("mount point %s is a symlink: refusing it (remove it)", p)
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("mount point %s is not a folder (mode %#o): refusing it (remove it)", p, st.Mode&unix.S_IFMT)
	case st.Uid != 0:
		return fmt.Errorf("mount point %s belongs to uid %d, not root: refusing it (remove it)", p, st.Uid)
	}
	return nil
}

// mountOver binds host over inside in this thread's mount namespace. The
// mount point is opened with no link followed anywhere on its path and
// checked again, and the mount is made on that descriptor: a link swapped
// in since MountPoint is refused, never mounted through.
func mountOver(host, inside string) error {
	fd, err := unix.Openat2(unix.AT_FDCWD, inside, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return fmt.Errorf("mount point %s: %w", inside, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("mount point %s: %w", inside, err)
	}
	if err := ownFolder(inside, &st); err != nil {
		return err
	}
	if err := unix.Mount(host, "/proc/self/fd/"+strconv.Itoa(fd), "", unix.MS_BIND|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("bind %s at %s: %w", host, inside, err)
	}
	return nil
}
