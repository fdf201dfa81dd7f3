package probe

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// Bounds of one search. They are generous, and reaching one is never
// silent: the report then says "partial" (see partialError), keeps what
// was found, and the harness does not count it as a search made.
const (
	searchFiles    = 20000    // regular files opened
	searchFileHead = 64 << 10 // bytes read from the head of each file
	searchDepth    = 64       // folders below a root
	searchSockets  = 16       // unix sockets a hunt connects to
)

// partialError says a search stopped before it covered everything.
type partialError struct{ why []string }

func (e *partialError) Error() string { return "partial: " + joinCapped(e.why, "; ", 8) }

// errAbsent: none of the roots exists. A search of nothing is complete.
var errAbsent = errors.New("absent")

// search is one bounded breadth-first search over folders: shallow places
// (~/.aws, a mount point's top) are seen before deep ones, so a deadline
// costs the deep end. visit gets every regular file and unix socket.
type search struct {
	ctx    context.Context
	cancel context.CancelFunc     // run's end frees ctx's timer
	skip   map[wire.FileID]string // folders never entered (notSearched)
	visit  func(p string, st *unix.Stat_t)
	first  int // roots searched completely before the rest (hints)
	// socketsOnly: a search for sockets (the engine scan) reads no file,
	// so regular files are neither visited nor counted against the bound.
	socketsOnly bool
	// since, when non-zero, is the ctime (ns) below which a regular file
	// is not visited nor counted: it cannot hold what was written since.
	since int64

	mu      sync.Mutex
	files   int
	older   int            // regular files left unopened as older than since
	perRoot map[string]int // files counted under each root
	partial []string
	absent  []string
}

// enterNamed lets a search enter the folder it was asked for by name
// though it lies in the probe's folder: a wrapper's agent home is
// /gatehouse/work, a mount there, and a search of "~" that skipped it was
// blind. The probe's folder itself is never entered, nor anything else
// skipped.
func (s *search) enterNamed(root string) {
	if filepath.Clean(root) == probeHome {
		return
	}
	if id, err := wire.StatID(root); err == nil && s.skip[id] == probeOwn {
		delete(s.skip, id)
	}
}

// queued is a folder waiting to be read.
type queued struct {
	path  string
	root  string // the root it was reached from, to name a root too big
	dev   uint64
	depth int
}

func newSearch(ctx context.Context, visit func(string, *unix.Stat_t)) *search {
	ms, _ := readMounts() // without a mount table, nothing is skipped
	ctx, cancel := beforeDeadline(ctx)
	return &search{ctx: ctx, cancel: cancel, skip: notSearched(ms), visit: visit}
}

// beforeDeadline ends a search a little before its attempt's deadline, so
// that the search stops itself and says where it was and which mount was
// too big, rather than gather's "deadline reached" saying nothing of it.
func beforeDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok {
		return ctx, func() {}
	}
	margin := min(time.Until(d)/10, 500*time.Millisecond)
	return context.WithDeadline(ctx, d.Add(-margin))
}

// run searches roots in order. The first s.first roots (hints: small,
// targeted places) are searched completely before the others start, so a
// huge root cannot use up the deadline before them. It returns errAbsent
// when no root exists, the first root's error when none could be
// searched, a *partialError when a bound or the deadline stopped it, and
// nil otherwise.
func (s *search) run(roots []string) error {
	if s.cancel != nil {
		defer s.cancel()
	}
	visited := map[wire.FileID]bool{}
	var firstErr error
	searched := 0
	first := min(max(s.first, 0), len(roots))
	for _, phase := range [][]string{roots[:first], roots[first:]} {
		var queue []queued
		for _, r := range phase {
			var st unix.Stat_t
			if err := unix.Stat(r, &st); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					s.note(&s.absent, r)
					continue
				}
				if firstErr == nil {
					firstErr = &fs.PathError{Op: "stat", Path: r, Err: err}
				}
				continue
			}
			if st.Mode&unix.S_IFMT != unix.S_IFDIR {
				searched++
				s.file(r, r, &st)
				continue
			}
			if id := wire.FileIDOf(&st); !visited[id] && s.skip[id] == "" {
				visited[id] = true
				queue = append(queue, queued{r, r, st.Dev, 0})
			}
		}
		for len(queue) > 0 && !s.stopped() {
			if s.ctx.Err() != nil {
				s.stop(fmt.Sprintf("deadline reached with %d folders not read (first: %s, under %s)%s", len(queue), queue[0].path, queue[0].root, s.largest()))
				break
			}
			q := queue[0]
			queue = queue[1:]
			sub, err := s.readDir(q, visited)
			switch {
			case err == nil && q.depth == 0:
				searched++
			case err != nil && q.depth == 0 && firstErr == nil:
				firstErr = err // a root the kernel would not list: denied
			}
			queue = append(queue, sub...)
		}
		if s.stopped() {
			return s.partialErr()
		}
	}
	switch {
	case searched == 0 && firstErr != nil:
		return firstErr
	case searched == 0 && len(s.absent) < len(roots):
		return nil // the roots were folders not searched by rule (system software)
	case searched == 0:
		return errAbsent
	}
	return nil
}

// readDir visits one folder's files and returns its sub-folders to read.
// A folder the kernel will not list is covered (the kernel said no); the
// error matters only for a root.
func (s *search) readDir(q queued, visited map[wire.FileID]bool) ([]queued, error) {
	ents, err := os.ReadDir(q.path)
	if err != nil && len(ents) == 0 {
		return nil, err
	}
	var next []queued
	for _, e := range ents {
		if s.ctx.Err() != nil {
			s.stop("deadline reached inside " + q.path + " (under " + q.root + ")" + s.largest())
			return nil, nil
		}
		p := filepath.Join(q.path, e.Name())
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil {
			continue
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			id := wire.FileIDOf(&st)
			if visited[id] || s.skip[id] != "" || (st.Dev != q.dev && isPseudoDir(p)) {
				continue
			}
			if q.depth+1 > searchDepth {
				s.stop("deeper than " + fmt.Sprint(searchDepth) + " folders at " + p)
				continue
			}
			visited[id] = true
			next = append(next, queued{p, q.root, st.Dev, q.depth + 1})
		case unix.S_IFLNK:
			// Kubernetes projects a token as token -> ..data/token: follow
			// links to files and sockets, never to folders (loops).
			if unix.Stat(p, &st) == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
				s.file(q.root, p, &st)
			}
		default:
			s.file(q.root, p, &st)
		}
		if s.stopped() {
			return nil, nil
		}
	}
	return next, nil
}

// file hands a regular file or socket to visit, counting files (under
// root, the root it was reached from).
func (s *search) file(root, p string, st *unix.Stat_t) {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if s.socketsOnly {
			return
		}
		if s.since != 0 && st.Ctim.Nano() < s.since {
			s.mu.Lock()
			s.older++
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
		s.files++
		if s.perRoot == nil {
			s.perRoot = map[string]int{}
		}
		s.perRoot[root]++
		over := s.files > searchFiles
		s.mu.Unlock()
		if over {
			s.stop(fmt.Sprintf("more than %d files%s", searchFiles, s.largest()))
			return
		}
	case unix.S_IFSOCK:
	default:
		return
	}
	s.visit(p, st)
}

func (s *search) note(list *[]string, p string) {
	s.mu.Lock()
	*list = append(*list, p)
	s.mu.Unlock()
}

// largest names the root most of the files read so far were under: the
// mount too big to search within the bounds, said when a search stops.
func (s *search) largest() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	top, n := "", 0
	for r, c := range s.perRoot {
		if c > n || c == n && r < top {
			top, n = r, c
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; the largest: %s, %d of %d files read were there", top, n, s.files)
}

// stop marks the search partial, with why.
func (s *search) stop(why string) { s.note(&s.partial, why) }

func (s *search) stopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.partial) > 0
}

func (s *search) partialErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &partialError{why: append([]string(nil), s.partial...)}
}

// Older is how many regular files were left unopened as older than since.
func (s *search) Older() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.older
}

// Files is how many regular files the search opened so far.
func (s *search) Files() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.files
}

// gather runs fn in its own goroutine and returns fn's error, or a
// *partialError when ctx ends first. A search stuck in one read (a FIFO,
// a hung network file) so costs the rest of the search, never what it
// has already found: fn's findings live in a collector read afterwards.
func gather(ctx context.Context, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("probe: search panicked: %v", p)
			}
		}()
		done <- fn()
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return &partialError{why: []string{"deadline reached before the search finished (a read or a socket still open)"}}
	}
}

func joinCapped(list []string, sep string, n int) string {
	out := ""
	for i, s := range list {
		if i == n {
			return out + fmt.Sprintf("%s%d more", sep, len(list)-n)
		}
		if i > 0 {
			out += sep
		}
		out += s
	}
	return out
}
