package steps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/hostwrite"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// Bounds of the search for writes after a stop: the folders are the
// session's to fill.
const (
	maxWriteEntries = 5000     // entries walked, all binds together
	maxMarkRead     = 64 << 10 // bytes read of one file for the session's mark
	maxMarkBytes    = 8 << 20  // bytes read of all files together
)

// bindRoot is one host folder or file the runtime binds read-write into a
// session, opened before the stop with no link followed: searched through
// that descriptor afterwards, so nothing swapped in at its path is entered.
type bindRoot struct {
	src  string // as the argv or the mount list names it
	host string // where it is on the host
	dir  *untrusted.Dir
	// Or a file (a socket, a FIFO): its name in the folder holding it.
	parent *untrusted.Dir
	name   string
	// removed: under what the stop removes (Created, limits.temporary):
	// gone afterwards is the stop's work, and the storage check's to judge.
	removed bool
}

// bindRoots are a session's writable binds; unresolved are those that
// could not be opened, and why: nothing there was searched.
type bindRoots struct {
	roots      []bindRoot
	unresolved []string
}

func (b bindRoots) Close() {
	for _, r := range b.roots {
		if r.dir != nil {
			r.dir.Close()
		}
		if r.parent != nil {
			r.parent.Close()
		}
	}
}

// bindSource is one read-write bind a runtime reported.
type bindSource struct {
	src      string
	optional bool // bwrap's --bind-try: no source, no bind
}

// writableSources are the read-write binds, from what Inspect read back:
// bwrap's --bind arguments (never another runtime's argv, which is the
// sandbox's own command line), docker's read-write bind mounts.
func writableSources(cfg targets.Config) []bindSource {
	var out []bindSource
	if cfg.Target == "bwrap" || (len(cfg.Argv) > 0 && path.Base(cfg.Argv[0]) == "bwrap") {
		for i := 0; i+2 < len(cfg.Argv); i++ {
			switch a := cfg.Argv[i]; a {
			case "--":
				i = len(cfg.Argv) // the sandbox's command follows
			case "--bind", "--bind-try", "--dev-bind", "--dev-bind-try":
				out = append(out, bindSource{cfg.Argv[i+1], strings.HasSuffix(a, "-try")})
				i += 2
			}
		}
	}
	for _, m := range cfg.Mounts {
		// docker: "bind SRC -> DST (rw)"
		if rest, ok := strings.CutPrefix(m, "bind "); ok && strings.HasSuffix(m, "(rw)") {
			if src, _, ok := strings.Cut(rest, " -> "); ok {
				out = append(out, bindSource{src: src})
			}
		}
	}
	return out
}

// openBinds opens the session's writable binds before its stop. A source
// the runtime reported a host path for (bwrap's doors) is opened there. A
// link on the way is followed only when it is the host's own, older than
// before. removed are the paths the stop removes.
func openBinds(cfg targets.Config, before time.Time, removed []string) bindRoots {
	var b bindRoots
	seen := map[string]bool{}
	for _, s := range writableSources(cfg) {
		host := s.src
		if h, ok := cfg.Sources[s.src]; ok {
			host = h
		}
		if seen[host] {
			continue
		}
		seen[host] = true
		r, err := openRoot(host, before)
		switch {
		case err == nil:
			r.src, r.removed = s.src, under(host, removed)
			b.roots = append(b.roots, r)
		case s.optional && errors.Is(err, fs.ErrNotExist):
			// --bind-try of nothing: bound nothing.
		default:
			b.unresolved = append(b.unresolved, fmt.Sprintf("the read-write bind %s could not be opened on the host: %v", s.src, err))
		}
	}
	return b
}

func openRoot(host string, before time.Time) (bindRoot, error) {
	if !path.IsAbs(host) {
		return bindRoot{}, fmt.Errorf("%q is not an absolute host path", host)
	}
	host = path.Clean(host)
	d, err := hostwrite.OpenDir(host, before)
	if err == nil {
		return bindRoot{host: host, dir: d}, nil
	}
	if !errors.Is(err, unix.ENOTDIR) || host == "/" {
		return bindRoot{}, err
	}
	// A file bound: looked at in its folder, never followed or opened but
	// as a regular file.
	parent, err := hostwrite.OpenDir(path.Dir(host), before)
	if err != nil {
		return bindRoot{}, err
	}
	fi, err := parent.Lstat(path.Base(host))
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		err = fmt.Errorf("%s is a link: not followed", host)
	}
	if err != nil {
		parent.Close()
		return bindRoot{}, err
	}
	return bindRoot{host: host, parent: parent, name: path.Base(host)}, nil
}

func under(p string, roots []string) bool {
	for _, r := range roots {
		r = path.Clean(r)
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

// lateWrites are the entries modified after a moment, by whose they are.
type lateWrites struct {
	own        []string // carry the session's mark: its canary, or its heartbeat file's name
	other      []string // carry none: another session's, or the host's
	unsearched []string // could not be searched, and why
}

// writes looks through the binds for entries modified after since. Only
// one carrying the session's mark counts against it: a folder bound into
// every session holds its peers' writes too. The binds are the session's
// own to write, so they are searched as hostile input (no link followed,
// no other file system entered, no FIFO opened), within bounds; a search
// cut or failed is said, never taken for "nothing found".
func writes(ctx context.Context, b bindRoots, since time.Time, canary string) lateWrites {
	s := &markSearch{since: since, canary: canary}
	for _, r := range b.roots {
		switch {
		case r.parent != nil:
			s.file(r)
		case gone(r.dir):
			if !r.removed {
				s.out.unsearched = append(s.out.unsearched, r.src+": the folder was removed after the stop")
			}
		default:
			s.dir(ctx, r)
		}
	}
	return s.out
}

// gone says a folder held open was removed since.
func gone(d *untrusted.Dir) bool {
	var st unix.Stat_t
	return unix.Fstat(d.Fd(), &st) == nil && st.Nlink == 0
}

type markSearch struct {
	since   time.Time
	canary  string
	entries int
	read    int64
	out     lateWrites
}

func (s *markSearch) dir(ctx context.Context, r bindRoot) {
	if s.entries >= maxWriteEntries {
		s.out.unsearched = append(s.out.unsearched, fmt.Sprintf("%s: not searched, the search was cut at %d entries", r.src, maxWriteEntries))
		return
	}
	err := r.dir.Walk(ctx, untrusted.Limits{Entries: maxWriteEntries - s.entries}, func(d *untrusted.Dir, e untrusted.Entry) error {
		if listedHook != nil {
			listedHook(e.Path)
		}
		s.entries++
		if e.Mode.IsDir() || !e.ModTime.After(s.since) {
			return nil
		}
		where := filepath.Join(r.host, filepath.FromSlash(e.Path))
		own, err := s.marked(path.Base(e.Path), e.Link, func() (io.ReaderAt, func(), error) {
			if !e.Mode.IsRegular() {
				return nil, nil, nil
			}
			f, err := d.Open(path.Base(e.Path))
			if err != nil {
				return nil, nil, err
			}
			return f, func() { f.Close() }, nil
		})
		s.note(where, own, err)
		return nil
	})
	if err != nil {
		s.out.unsearched = append(s.out.unsearched, fmt.Sprintf("%s: the search stopped after %d entries: %v", r.src, s.entries, err))
	}
}

func (s *markSearch) file(r bindRoot) {
	fi, err := r.parent.Lstat(r.name)
	switch {
	case errors.Is(err, fs.ErrNotExist) && r.removed:
		return
	case err != nil:
		s.out.unsearched = append(s.out.unsearched, fmt.Sprintf("%s: %v", r.src, err))
		return
	case !fi.ModTime().After(s.since):
		return
	}
	own, err := s.marked(r.name, "", func() (io.ReaderAt, func(), error) {
		if !fi.Mode().IsRegular() {
			return nil, nil, nil
		}
		f, err := r.parent.Open(r.name)
		if err != nil {
			return nil, nil, err
		}
		return f, func() { f.Close() }, nil
	})
	s.note(r.host, own, err)
}

func (s *markSearch) note(where string, own bool, err error) {
	switch {
	case own:
		s.out.own = append(s.out.own, where)
	case errors.Is(err, fs.ErrNotExist):
		s.out.other = append(s.out.other, where+" (removed since)")
	case err != nil:
		s.out.unsearched = append(s.out.unsearched, fmt.Sprintf("%s: modified after the stop, and whose it is could not be read: %v", where, err))
	default:
		s.out.other = append(s.out.other, where)
	}
}

// marked says whether an entry carries the session's mark: in its name,
// its link's text, or its first bytes (the probe's heartbeat writes its
// tag on every line). A file past the read bound without the mark in
// what was read is an error: its mark could be further on.
func (s *markSearch) marked(name, link string, open func() (io.ReaderAt, func(), error)) (bool, error) {
	if s.canary == "" {
		return false, errors.New("the session has no canary to look for")
	}
	if strings.Contains(name, s.canary) || strings.HasPrefix(name, wire.HeartbeatName(s.canary)) || strings.Contains(link, s.canary) {
		return true, nil
	}
	r, done, err := open()
	if err != nil || r == nil {
		return false, err
	}
	defer done()
	n := min(int64(maxMarkRead), maxMarkBytes-s.read)
	if n <= 0 {
		return false, fmt.Errorf("%w: %d bytes of files read already", untrusted.ErrTooLarge, maxMarkBytes)
	}
	buf := make([]byte, n+1)
	k, err := r.ReadAt(buf, 0)
	s.read += int64(k)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	if bytes.Contains(buf[:k], []byte(s.canary)) {
		return true, nil
	}
	if int64(k) > n {
		return false, fmt.Errorf("%w: its first %d bytes do not carry the session's canary", untrusted.ErrTooLarge, n)
	}
	return false, nil
}

// storageLeft says which of the paths (storage the stop removes) are
// still there, a link or a FIFO included (none followed, none opened),
// and which could not be looked at: a link on the way there that is not
// the host's own is not followed, and says so.
func storageLeft(paths []string, before time.Time) (left, unknown []string) {
	for _, p := range paths {
		if !path.IsAbs(p) || path.Clean(p) == "/" {
			unknown = append(unknown, fmt.Sprintf("storage %s: not an absolute path below /", p))
			continue
		}
		exists, _, err := hostwrite.Look("/", strings.TrimPrefix(path.Clean(p), "/"), before)
		switch {
		case err != nil:
			unknown = append(unknown, fmt.Sprintf("storage %s could not be looked at: %v", p, err))
		case exists:
			left = append(left, "storage "+p)
		}
	}
	return left, unknown
}
