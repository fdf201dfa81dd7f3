// Package scratch makes the harness's own working folders (session
// staging, report spools, planting places, downloads being unpacked) in
// one root-only folder on the host, never in the shared /tmp.
//
// In /tmp, anyone who can write the host's /tmp — any local user, root in
// a sandbox whose profile binds it — can plant a link where the harness
// will write, or swap a report for a link to a host secret that the
// harness then reads into signed evidence. Under Base, which is owned by
// root, mode 0700, checked to be a real folder (no link) every time, only
// root on the host itself can. Every folder is recorded on the run's
// ledger, so a run killed with SIGKILL leaves nothing that `gatehouse lab
// down` does not remove.
package scratch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"

	"github.com/gatehouse-dev/gatehouse/internal/ledger"
)

// Base holds every scratch folder when the harness runs as root. Profiles
// may not bind it or anything above it (internal/targets/profile checks that).
const Base = "/run/gatehouse/scratch"

var (
	baseMu sync.Mutex
	base   string
)

// Dir is the folder scratch folders go in: Base as root; for an
// unprivileged user (who runs no sandbox of ours: verify, diff, tests of
// pure code) a folder of their own, 0700, under the system temp folder.
// A folder removed under a long-lived process (an old `lab down --all`
// next to it, a tidy-up of /run) is made again, checked as the first
// time, rather than failing every later session.
func Dir() (string, error) {
	baseMu.Lock()
	defer baseMu.Unlock()
	if base != "" {
		if fi, err := os.Lstat(base); err == nil && fi.IsDir() {
			return base, nil
		}
	}
	d, err := ensure()
	if err != nil {
		return "", err
	}
	base = d
	return d, nil
}

func ensure() (string, error) {
	if os.Geteuid() == 0 {
		for _, d := range []string{"/run/gatehouse", Base} {
			if err := private(d, 0); err != nil {
				return "", err
			}
		}
		return Base, nil
	}
	tmp := os.TempDir()
	if real, err := filepath.EvalSymlinks(tmp); err == nil {
		tmp = real // the system's own link (/tmp -> /private/tmp): below it, none is followed
	}
	d := filepath.Join(tmp, fmt.Sprintf("gatehouse-scratch-%d", os.Geteuid()))
	return d, private(d, os.Geteuid())
}

// private makes d (0700) or checks the one there: a real folder, not a
// link, owned by uid, writable by nobody else.
func private(d string, uid int) error {
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("scratch: %w", err)
	}
	fi, err := os.Lstat(d)
	if err != nil {
		return fmt.Errorf("scratch: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("scratch: %s is a %v, not a folder: refusing to work in it (remove it)", d, fi.Mode().Type())
	case !ok || int(st.Uid) != uid:
		return fmt.Errorf("scratch: %s belongs to uid %d, not %d: refusing to work in it (remove it)", d, st.Uid, uid)
	case fi.Mode().Perm()&0o076 != 0:
		// Made by an older Gatehouse or by hand: tighten it, it is ours.
		// A search bit alone stays: a docker session in a private user
		// namespace adds it (as Docker's own remap does) so that its
		// unmapped root reaches its places by their random names, and
		// another run's process taking it away would break that session.
		if err := os.Chmod(d, fi.Mode().Perm()&0o701); err != nil {
			return fmt.Errorf("scratch: %w", err)
		}
	}
	return nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// New makes a fresh folder named after kind ("diff", "srt-tmp",
// ...) under Dir, recorded on the ledger. release removes it and its
// ledger note; it is safe to call twice.
func New(kind string) (dir string, release func() error, err error) {
	parent, err := Dir()
	if err != nil {
		return "", nil, err
	}
	dir, err = os.MkdirTemp(parent, "gatehouse-"+unsafeName.ReplaceAllString(kind, "_")+"-")
	if err != nil {
		return "", nil, fmt.Errorf("scratch: %w", err)
	}
	rel, _ := ledger.Record(ledger.Entry{Kind: ledger.Path, What: dir})
	var once sync.Once
	return dir, func() error {
		var err error
		once.Do(func() {
			if err = os.RemoveAll(dir); err == nil {
				rel()
			}
		})
		return err
	}, nil
}
