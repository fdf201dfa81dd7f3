package bwrap

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
)

// handLimits bound a handover walk: the harness's own plants are a few
// files; anything larger is not what the harness made.
var handLimits = untrusted.Limits{Entries: 4096, Depth: 16}

// handOver gives the run's unprivileged user what a platform gives the
// agent's user: the session's work folder (and what the stage put in it),
// and the places the profile binds. Read-only places (a home with its
// credential files, mounted secrets) are handed over whole, as the agent's
// own files would be its user's; read-write places (its storage, a shared
// root) only the folder itself, which is what writing in them needs. A
// place other sessions could write is walked without following a link,
// and nothing is chmodded: under root (the breach path) nothing changes.
func handOver(ctx context.Context, u hostUser, st *stage, places []placeBind) error {
	st.owner = &u
	if err := chownTree(ctx, u, st.fs+"/work", true); err != nil {
		return fmt.Errorf("stage: hand the work folder to host uid %d: %w", u.uid, err)
	}
	for _, p := range places {
		if err := chownTree(ctx, u, p.host, !p.rw); err != nil {
			return fmt.Errorf("hand place %s to host uid %d: %w", p.host, u.uid, err)
		}
	}
	return nil
}

// chownTree gives path (never followed if a link) to u, and with whole
// everything below it, no link followed, no other filesystem entered.
func chownTree(ctx context.Context, u hostUser, path string, whole bool) error {
	parent, err := untrusted.OpenDir(filepath.Dir(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // an optional place that is not there
	}
	if err != nil {
		return err
	}
	defer parent.Close()
	base := filepath.Base(path)
	if err := lchownAt(parent, base, u); err != nil {
		if errors.Is(err, unix.ENOENT) {
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
	return d.Walk(ctx, handLimits, func(in *untrusted.Dir, e untrusted.Entry) error {
		return lchownAt(in, filepath.Base(e.Path), u)
	})
}

// lchownAt gives the entry name (a link itself, never what it points at)
// to u, through a path descriptor so the entry checked is the one changed.
// A file with more than one name is left alone: a hard link someone made
// to a file that is not theirs must not hand it over.
func lchownAt(d *untrusted.Dir, name string, u hostUser) error {
	fd, err := unix.Openat(d.Fd(), name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("chown %s/%s: %w", d.Name(), name, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("chown %s/%s: %w", d.Name(), name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Nlink > 1 {
		return nil
	}
	if err := unix.Fchownat(fd, "", u.uid, u.gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("chown %s/%s: %w", d.Name(), name, err)
	}
	return nil
}
