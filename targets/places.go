package targets

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// FileID names one file on the host by device and inode: the folder the
// harness made for a place, whatever a path to it later leads to.
type FileID struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// ErrPlaceSwapped means the folder at a place's path is not the one the
// harness made for it: another session (one that binds storage-root or
// shared writable) replaced it. Nothing is bound; the session does not start.
var ErrPlaceSwapped = errors.New("not the folder the harness made for this place (replaced since)")

// IDOf is the identity of an open file.
func IDOf(f *os.File) (FileID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return FileID{}, fmt.Errorf("fstat %s: %w", f.Name(), err)
	}
	return FileID{Dev: st.Dev, Ino: st.Ino}, nil
}

// IdentifyPlace is the identity of the folder at p, opened with no symlink
// in any component: what a harness records in Spec.PlaceIDs for a place
// it made where no sandbox could reach yet.
func IdentifyPlace(p string) (FileID, error) {
	f, err := openNoLinks(unix.AT_FDCWD, p, unix.O_DIRECTORY, unix.RESOLVE_NO_SYMLINKS|unix.RESOLVE_NO_MAGICLINKS)
	if err != nil {
		return FileID{}, err
	}
	defer f.Close()
	return IDOf(f)
}

// OpenPlace opens host, a path Expand made from a {{place:NAME}} reference
// (the place's folder or a path below it), as an O_PATH descriptor: no
// symlink is followed in any component, and the place's folder on the way
// must be the one the harness made (Spec.PlaceIDs). A target binds the
// descriptor (race-free), or checks with it before and after a runtime
// binds by path. ok is false, with no file, when host lies under no place
// (a host path the profile names itself).
func OpenPlace(spec Spec, host string) (f *os.File, ok bool, err error) {
	name, root := placeOf(spec, host)
	if name == "" {
		return nil, false, nil
	}
	want, recorded := spec.PlaceIDs[name]
	if !recorded {
		// Fail closed: an identity nobody recorded cannot be checked.
		return nil, true, fmt.Errorf("place %s (%s): no identity recorded for it: not bound", name, root)
	}
	rf, err := openNoLinks(unix.AT_FDCWD, root, unix.O_DIRECTORY, unix.RESOLVE_NO_SYMLINKS|unix.RESOLVE_NO_MAGICLINKS)
	if err != nil {
		return nil, true, fmt.Errorf("place %s: %w", name, err)
	}
	got, err := IDOf(rf)
	if err != nil {
		rf.Close()
		return nil, true, fmt.Errorf("place %s: %w", name, err)
	}
	if got != want {
		rf.Close()
		return nil, true, fmt.Errorf("place %s: %s is %d:%d, made as %d:%d: %w", name, root, got.Dev, got.Ino, want.Dev, want.Ino, ErrPlaceSwapped)
	}
	rest := strings.TrimPrefix(strings.TrimPrefix(host, root), "/")
	if rest == "" {
		return rf, true, nil
	}
	defer rf.Close()
	sub, err := openNoLinks(int(rf.Fd()), rest, 0, unix.RESOLVE_BENEATH|unix.RESOLVE_NO_SYMLINKS|unix.RESOLVE_NO_MAGICLINKS)
	if err != nil {
		return nil, true, fmt.Errorf("place %s: %w", name, err)
	}
	return sub, true, nil
}

// CheckPlaces opens every place of spec as OpenPlace does: a harness's
// last look before Start, so a replaced place fails the start with a clear
// error whatever the target does.
func CheckPlaces(spec Spec) error {
	var errs []error
	for _, p := range spec.Places {
		f, _, err := OpenPlace(spec, p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		f.Close()
	}
	return errors.Join(errs...)
}

// placeOf is the place host lies in (the longest place path that is host
// or a folder above it), "" for none.
func placeOf(spec Spec, host string) (name, root string) {
	for n, p := range spec.Places {
		if p == "" || (host != p && !strings.HasPrefix(host, strings.TrimSuffix(p, "/")+"/")) {
			continue
		}
		if len(p) > len(root) {
			name, root = n, p
		}
	}
	return name, root
}

// openNoLinks opens name below dirfd as O_PATH with resolve's rules; a
// link on the way is named as the refusal it is. No O_NOFOLLOW: with
// O_PATH it would open a trailing link itself instead of refusing it.
func openNoLinks(dirfd int, name string, flags int, resolve uint64) (*os.File, error) {
	how := unix.OpenHow{Flags: uint64(unix.O_PATH | unix.O_CLOEXEC | flags), Resolve: resolve}
	for {
		fd, err := unix.Openat2(dirfd, name, &how)
		switch {
		case err == unix.EINTR || err == unix.EAGAIN:
			continue
		case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV):
			return nil, &os.PathError{Op: "open", Path: name, Err: fmt.Errorf("a symbolic link (or a way out) on the way: refused, never followed: %w", err)}
		case err != nil:
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
		return os.NewFile(uintptr(fd), name), nil
	}
}
