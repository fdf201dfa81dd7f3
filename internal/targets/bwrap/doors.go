package bwrap

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// DoorDir is where bubblewrap finds what the harness hands a session (the
// staging folder, the init, the resolver file, the places a profile binds).
// Each session's bubblewrap starts in a private mount namespace of its own
// in which a small tmpfs over DoorDir holds one bind mount (a "door") per
// such source, so:
//   - bubblewrap running as an unprivileged uid reaches them without the
//     root-only folders they live in being opened to anyone: the doors are
//     bound from descriptors the harness opened as root;
//   - the argv in the evidence names stable paths, not per-run folders.
//
// On the host DoorDir is an empty folder (a mount point only). It does not
// cover /run/gatehouse: a profile that binds the host's / must still show
// what the host holds (the harness's canaries stand in for the host's own
// secrets) to whoever may read it there.
const DoorDir = "/run/gatehouse-doors"

// door is one host file or folder, bound at DoorDir/name.
type door struct {
	name string // a plain file name
	host string // what is bound there
	// plain: refuse any symlink on the way (a place other sessions could
	// write); the harness's own files (init binary, agent trees) may sit
	// behind a link of the machine's.
	plain bool
	// optional: a --*-bind-try source that may not exist (no door then,
	// and bubblewrap skips the bind).
	optional bool
	// open, for a harness place, opens the source instead
	// (targets.OpenPlace): no link, and the very folder the harness made.
	open func() (*os.File, error)
}

func (d door) path() string { return DoorDir + "/" + d.name }

// enterDoors gives the calling (locked) thread a private mount namespace
// with the doors mounted at DoorDir. The thread's children (bubblewrap)
// inherit it; the harness's other threads never see it.
func enterDoors(doors []door) error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("doors: new mount namespace: %w", err)
	}
	// Nothing mounted here may propagate back to the host.
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("doors: make / private: %w", err)
	}
	// Opened in this namespace: a bind's source must be one of its mounts.
	fds := make([]int, len(doors))
	defer func() {
		for _, fd := range fds {
			if fd > 0 {
				unix.Close(fd)
			}
		}
	}()
	for i, d := range doors {
		fd, err := openSource(d)
		if err != nil {
			return err
		}
		fds[i] = fd
	}
	if err := ensureDoorDir(); err != nil {
		return err
	}
	if err := unix.Mount("gatehouse-doors", DoorDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755,size=1m,nr_inodes=4096"); err != nil {
		return fmt.Errorf("doors: tmpfs at %s: %w", DoorDir, err)
	}
	for i, d := range doors {
		if fds[i] < 0 {
			continue // an optional source that is not there
		}
		if err := mountDoor(fds[i], d); err != nil {
			return err
		}
	}
	return nil
}

// openSource opens a door's source as a path descriptor (O_PATH: no read,
// no FIFO opened, no device touched); -1 for a missing optional one.
func openSource(d door) (int, error) {
	flags := unix.O_PATH | unix.O_CLOEXEC
	var fd int
	var err error
	if d.open != nil {
		var f *os.File
		if f, err = d.open(); err == nil {
			fd, err = unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
			f.Close()
		}
	} else if d.plain {
		how := unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		for {
			fd, err = unix.Openat2(unix.AT_FDCWD, d.host, &how)
			if err != unix.EINTR && err != unix.EAGAIN {
				break
			}
		}
	} else {
		fd, err = unix.Open(d.host, flags, 0)
	}
	switch {
	case err == nil:
		return fd, nil
	case d.optional && errors.Is(err, unix.ENOENT):
		return -1, nil
	case d.open != nil:
		return -1, fmt.Errorf("doors: not bound: %w", err)
	case errors.Is(err, unix.ELOOP):
		return -1, fmt.Errorf("doors: %s: a symbolic link on the way: not bound (the harness's places are never reached through a link)", d.host)
	}
	return -1, fmt.Errorf("doors: open %s: %w", d.host, err)
}

// mountDoor makes the mount point (a folder for a folder, an empty file
// for anything else) and binds the descriptor's file there.
func mountDoor(fd int, d door) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("doors: %s: %w", d.host, err)
	}
	at := d.path()
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		if err := unix.Mkdir(at, 0o755); err != nil {
			return fmt.Errorf("doors: %s: %w", at, err)
		}
	} else {
		mfd, err := unix.Open(at, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return fmt.Errorf("doors: %s: %w", at, err)
		}
		unix.Close(mfd)
	}
	src := "/proc/thread-self/fd/" + strconv.Itoa(fd)
	if err := unix.Mount(src, at, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("doors: bind %s at %s: %w", d.host, at, err)
	}
	return nil
}

// ensureDoorDir makes DoorDir on the host if it is missing: an empty
// root-owned folder (0755: the tmpfs over it decides the mode inside the
// private namespace). It must be a real folder, root's.
func ensureDoorDir() error {
	st, err := os.Lstat(DoorDir)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.Mkdir(DoorDir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("doors: %w", err)
		}
		st, err = os.Lstat(DoorDir)
	}
	if err != nil {
		return fmt.Errorf("doors: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("doors: %s is not a folder", DoorDir)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 {
		return fmt.Errorf("doors: %s is not root's", DoorDir)
	}
	return nil
}

// doorName is a door's file name: its role and index, and a label for a
// reader of the argv (a place's name, a file's path inside). Stable from
// run to run: no per-run folder is in it.
func doorName(role string, i int, label string) string {
	l := strings.Trim(unsafeName.ReplaceAllString(label, "_"), "_.")
	if len(l) > 48 {
		l = l[len(l)-48:]
	}
	return fmt.Sprintf("%s-%02d-%s", role, i, l)
}
