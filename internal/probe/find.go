package probe

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// findRoots bounds how many folders a glob target expands to.
const findRoots = 64

// systemDirs are never searched from a glob: huge, and no storage.
var systemDirs = map[string]bool{"/proc": true, "/sys": true, "/dev": true, "/usr": true, probeHome: true}

// doFind searches Target (see KindFind) and reports the token-shaped values
// found in files under it.
func doFind(ctx context.Context, s wire.Step, rep *wire.Report) error {
	c := newCollector(wire.Tokens, s.Payload)
	err := gather(ctx, func() error {
		roots, first, cut, err := findRootsOf(s.Target, s.Hints)
		if err != nil {
			return err
		}
		noteSkipped(s.Target, c)
		sr := newSearch(ctx, func(p string, st *unix.Stat_t) {
			if st.Mode&unix.S_IFMT != unix.S_IFREG {
				return
			}
			c.readFile()
			if b, err := readLimited(p, searchFileHead); err == nil {
				c.values(b, p)
			}
		})
		sr.first = first
		if len(roots) == 1 && roots[0] == plainTarget(s.Target) {
			sr.enterNamed(roots[0])
		}
		if !s.ChangedSince.IsZero() {
			sr.since = s.ChangedSince.UnixNano()
		}
		err = sr.run(roots)
		if n := sr.Older(); n > 0 {
			c.note(fmt.Sprintf("not opened: %d files last changed before %s, which cannot hold a value written since", n, s.ChangedSince.UTC().Format(time.RFC3339Nano)))
		}
		if cut != "" {
			return withPartial(err, cut)
		}
		return err
	})
	err = c.finish(rep, err)
	c.mu.Lock()
	rep.Bytes = c.files
	c.mu.Unlock()
	return err
}

// findRootsOf expands a search target into the roots to search, in order:
// "@mounts" is the host paths (hints) a careless mount would show under
// every mount point (the first `first` roots, searched before the rest),
// then every mount point worth searching; a glob is its matches; "~" is
// the agent's home; anything else is itself. cut says what was left out
// when a glob matched more than findRoots folders.
func findRootsOf(target string, hints []string) (roots []string, first int, cut string, err error) {
	switch {
	case target == "@mounts":
		ms, err := readMounts()
		if err != nil {
			return nil, 0, "", err
		}
		points := searchPoints(ms)
		under := underEach(points, hints)
		return append(under, points...), len(under), "", nil
	case target == "~" || strings.HasPrefix(target, "~/"):
		return []string{expandHome(target)}, 0, "", nil
	case !strings.ContainsAny(target, "*?["):
		return []string{target}, 0, "", nil
	}
	m, err := filepath.Glob(target)
	if err != nil {
		return nil, 0, "", err
	}
	kept, denied := m[:0], 0
	for _, p := range m {
		switch _, err := os.Stat(p); {
		case systemDirs[p]:
		case errors.Is(err, fs.ErrPermission):
			// The kernel said no (another user namespace's /proc/PID/cwd
			// in a shared pid namespace): covered, like a folder it will
			// not list, and not counted against the bound.
			denied++
		default:
			kept = append(kept, p)
		}
	}
	switch {
	case len(kept) == 0 && denied > 0:
		return nil, 0, "", &fs.PathError{Op: "stat", Path: target, Err: unix.EACCES}
	case len(kept) == 0:
		return nil, 0, "", errAbsent
	}
	if len(kept) > findRoots {
		return kept[:findRoots], 0, fmt.Sprintf("%d of %d glob matches not searched", len(kept)-findRoots, len(kept)), nil
	}
	return kept, 0, "", nil
}

// noteSkipped puts the mounts an "@mounts" search leaves out by rule in
// its report: what was not searched is on record with why.
func noteSkipped(target string, c *collector) {
	if target != "@mounts" {
		return
	}
	ms, _ := readMounts()
	for _, l := range skippedMounts(ms) {
		c.note(l)
	}
}

// underEach is every hint under every mount point, root included: where a
// bind of the host's / (or of any host folder above a hint) shows it.
func underEach(points, hints []string) []string {
	var out []string
	for _, h := range hints {
		out = append(out, h)
		for _, p := range points {
			if p != "/" {
				out = append(out, path.Join(p, h))
			}
		}
	}
	return out
}

// homeDir is the agent's home: $HOME, else root's.
func homeDir() string {
	if h := strings.TrimSpace(os.Getenv("HOME")); h != "" {
		return h
	}
	return "/root"
}

// plainTarget is the one folder a target names, or "" for "@mounts" and
// globs.
func plainTarget(target string) string {
	switch {
	case target == "@mounts", strings.ContainsAny(target, "*?["):
		return ""
	case target == "~" || strings.HasPrefix(target, "~/"):
		return expandHome(target)
	}
	return target
}
