package hostwrite

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
)

// MaxFile bounds what Undo reads of a file: the probe's notes are a few
// lines; a larger file is left and said to be.
const MaxFile = 1 << 20

// clockSlack allows for the kernel's coarse file clock, which can stamp a
// file made just after the plan was sent a few milliseconds before it.
const clockSlack = 20 * time.Millisecond

// Undo takes back the write, once the sandbox that made it is gone. An
// error that wraps ErrLeft means the run's bytes (or the folder or socket
// it made) are still there; any other error means the place could not be
// checked (a link on the way, a folder that cannot be opened).
func (w Write) Undo() (Outcome, error) {
	if err := w.Check(); err != nil {
		return Nothing, err
	}
	parent, base, err := openPlace(w.Under, w.Rel, w.Since)
	if absent(err) {
		return Nothing, nil
	}
	if err != nil {
		return Nothing, fmt.Errorf("hostwrite: %w", err)
	}
	defer parent.Close()
	var st unix.Statx_t
	err = unix.Statx(parent.Fd(), base, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE|unix.STATX_INO|unix.STATX_BTIME, &st)
	if absent(err) {
		return Nothing, nil
	}
	if err != nil {
		return Nothing, fmt.Errorf("hostwrite: %s: %w", w.Path(), err)
	}
	if st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && st.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		return Nothing, nil // a mount point is never the run's
	}
	// Whatever is there now must be what the probe made: a link, a FIFO
	// or a device in its place is not the run's, and is never followed.
	switch mode := uint32(st.Mode) & unix.S_IFMT; {
	case w.Form == File && mode == unix.S_IFREG:
		return w.undoFile(parent, base, &st)
	case w.Form == Socket && mode == unix.S_IFSOCK:
		return w.unlink(parent, base, &st, 0)
	case w.Form == Folder && mode == unix.S_IFDIR:
		return w.unlink(parent, base, &st, unix.AT_REMOVEDIR)
	}
	return Nothing, nil
}

// made says whether the run made the entry: seen absent before, or born
// after the plan was sent.
func (w Write) made(st *unix.Statx_t) bool {
	if w.Absent {
		return true
	}
	if st.Mask&unix.STATX_BTIME == 0 {
		return false // the file system does not say: not provably the run's
	}
	born := time.Unix(st.Btime.Sec, int64(st.Btime.Nsec))
	return !born.Before(w.Since.Add(-clockSlack))
}

// unlink removes a socket or an empty folder the run made.
func (w Write) unlink(parent *untrusted.Dir, base string, st *unix.Statx_t, flags int) (Outcome, error) {
	if !w.made(st) {
		return Nothing, nil
	}
	err := unix.Unlinkat(parent.Fd(), base, flags)
	switch {
	case err == nil:
		return Removed, nil
	case errors.Is(err, unix.ENOENT):
		return Nothing, nil
	case flags == unix.AT_REMOVEDIR && (errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST)):
		// Something else is in it: whatever of the run's is in there is
		// counted on its own; the folder is not only the run's any more.
		return Nothing, nil
	}
	return Nothing, fmt.Errorf("hostwrite: remove %s: %w: %w", w.Path(), err, ErrLeft)
}

// undoFile takes the run's payloads out of a regular file, and removes it
// when nothing else is left and the run made it.
func (w Write) undoFile(parent *untrusted.Dir, base string, st *unix.Statx_t) (Outcome, error) {
	how := unix.OpenHow{
		Flags:   unix.O_RDWR | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	fd, err := unix.Openat2(parent.Fd(), base, &how)
	if absent(err) {
		return Nothing, nil
	}
	if err != nil {
		return Nothing, fmt.Errorf("hostwrite: open %s: %w", w.Path(), err)
	}
	defer unix.Close(fd)
	var fst unix.Stat_t
	if err := unix.Fstat(fd, &fst); err != nil {
		return Nothing, fmt.Errorf("hostwrite: %s: %w", w.Path(), err)
	}
	if fst.Mode&unix.S_IFMT != unix.S_IFREG || fst.Ino != st.Ino {
		return Nothing, nil // swapped while we looked: not the file we saw
	}
	buf := make([]byte, MaxFile+1)
	n, err := readAt(fd, buf)
	if err != nil {
		return Nothing, fmt.Errorf("hostwrite: read %s: %w", w.Path(), err)
	}
	if n > MaxFile {
		if w.holdsPayload(buf[:MaxFile]) {
			return Nothing, fmt.Errorf("hostwrite: %s is larger than %d bytes: its run's lines were not taken out: %w", w.Path(), MaxFile, ErrLeft)
		}
		// Past the bound the run's bytes may still be in it (a sandbox can
		// pad the file to push them there): counted as left, never as gone.
		return Nothing, fmt.Errorf("hostwrite: %s is larger than %d bytes: not checked past them, so counted as left: %w", w.Path(), MaxFile, ErrLeft)
	}
	was := buf[:n]
	rest := was
	for _, p := range w.Payloads {
		rest = bytes.ReplaceAll(rest, []byte(p), nil)
	}
	if len(rest) == len(was) {
		return Nothing, nil
	}
	if len(rest) == 0 && w.made(st) {
		// The same file still at the name (nothing renamed over it)?
		var now unix.Stat_t
		if err := unix.Fstatat(parent.Fd(), base, &now, unix.AT_SYMLINK_NOFOLLOW); err == nil && now.Ino == fst.Ino && now.Dev == fst.Dev {
			if err := unix.Unlinkat(parent.Fd(), base, 0); err != nil && !errors.Is(err, unix.ENOENT) {
				return Nothing, fmt.Errorf("hostwrite: remove %s: %w: %w", w.Path(), err, ErrLeft)
			}
			return Removed, nil
		}
	}
	// Someone else's content stays, in the same file (its owner, mode and
	// inode kept): only the run's bytes are taken out.
	if _, err := unix.Pwrite(fd, rest, 0); err != nil {
		return Nothing, fmt.Errorf("hostwrite: rewrite %s: %w: %w", w.Path(), err, ErrLeft)
	}
	if err := unix.Ftruncate(fd, int64(len(rest))); err != nil {
		return Nothing, fmt.Errorf("hostwrite: truncate %s: %w: %w", w.Path(), err, ErrLeft)
	}
	return Restored, nil
}

func (w Write) holdsPayload(b []byte) bool {
	for _, p := range w.Payloads {
		if bytes.Contains(b, []byte(p)) {
			return true
		}
	}
	return false
}

// readAt fills buf from the start of the file, as far as the file goes.
func readAt(fd int, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := unix.Pread(fd, buf[n:], int64(n))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}
