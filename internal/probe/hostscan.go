package probe

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/unixsock"
)

// Bounds of the host scans.
const (
	homesPerMount = 16 // M/home/* folders listed per mount point
	engineSockets = 32 // sockets asked whether they are an engine
	engineAsks    = 8  // sockets asked at once
)

// doHostScan runs the host checks that list things for the harness to
// compare from outside ("mounts", "engines"). Like a search they may be
// partial, and keep what they found.
func doHostScan(ctx context.Context, s wire.Step, rep *wire.Report) error {
	c := newCollector(func([]byte) []string { return nil }, "")
	c.setHead("ok: scan not finished")
	err := gather(ctx, func() error {
		var head string
		var err error
		switch s.Target {
		case "mounts":
			head, err = scanMounts(c)
		case "engines":
			head, err = scanEngines(ctx, c)
		}
		if head != "" {
			c.setHead(head)
		}
		return err
	})
	return c.finish(rep, err)
}

// scanMounts lists, as "mnt MAJ:MIN:INO PATH", every mount point and the
// folders under it where a bind of a host's / or home would show host
// folders (etc, root, home, home/*). The probe cannot know which are the
// host's: the harness stats the host's own and compares.
func scanMounts(c *collector) (string, error) {
	ms, err := readMounts()
	if err != nil {
		return "", err
	}
	seen := map[string]bool{}
	list := func(p string) {
		if seen[p] {
			return
		}
		seen[p] = true
		if id, err := wire.StatID(p); err == nil {
			c.line("mnt " + id.String() + " " + p)
		}
	}
	n := 0
	var cut []string
	for _, m := range ms {
		if pseudoFS[m.FSType] {
			continue
		}
		n++
		list(m.Point)
		for _, sub := range []string{"etc", "root", "home"} {
			list(path.Join(m.Point, sub))
		}
		homes, _ := filepath.Glob(path.Join(m.Point, "home", "*"))
		sort.Strings(homes)
		if len(homes) > homesPerMount {
			cut = append(cut, fmt.Sprintf("%d of %d folders in %s/home not listed", len(homes)-homesPerMount, len(homes), m.Point))
			homes = homes[:homesPerMount]
		}
		for _, h := range homes {
			list(h)
		}
	}
	head := fmt.Sprintf("ok: %d mount points listed by device:inode", n)
	if len(cut) > 0 {
		return head, &partialError{why: cut}
	}
	return head, nil
}

// scanEngines finds unix sockets (well-known paths, the sandbox's own
// bound sockets, and a search of every mount point and the usual socket
// folders) and asks each, read-only, whether it is a container engine.
func scanEngines(ctx context.Context, c *collector) (string, error) {
	var mu sync.Mutex
	var socks []string
	seen := map[wire.FileID]bool{}
	add := func(p string, st *unix.Stat_t) {
		if st.Mode&unix.S_IFMT != unix.S_IFSOCK || labSocket(p) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if id := wire.FileIDOf(st); !seen[id] {
			seen[id] = true
			socks = append(socks, p)
		}
	}
	roots := append(append([]string(nil), unixsock.WellKnownSockets...), boundSockets()...)
	ms, _ := readMounts()
	homes, _ := filepath.Glob("/run/user/*")
	roots = append(roots, "/run", "/var/run", "/tmp", homeDir())
	roots = append(roots, homes...)
	roots = append(roots, searchPoints(ms)...)
	// Half the time to find sockets, half to ask them.
	sctx := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		sctx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(dl)/2))
		defer cancel()
	}
	sr := newSearch(sctx, add)
	sr.socketsOnly = true
	err := sr.run(roots)
	if err == errAbsent {
		err = nil
	}
	if len(socks) > engineSockets {
		err = withPartial(err, fmt.Sprintf("%d sockets found, %d asked", len(socks), engineSockets))
		socks = socks[:engineSockets]
	}
	engines := 0
	sem := make(chan struct{}, engineAsks)
	var wg sync.WaitGroup
	for _, p := range socks {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ans, _ := unixsock.AskEngine(ctx, p)
			if ans.Silent {
				// Silent is not "no engine": a starved dockerd is silent
				// too. The harness asks the host's socket of the same
				// device:inode itself, with more time (issue 22).
				id, _ := wire.StatID(p)
				c.line(fmt.Sprintf("silent %s %s", id, p))
				return
			}
			if ans.Type == "" {
				return
			}
			id, _ := wire.StatID(p)
			c.line(fmt.Sprintf("engine %s %s %s %s", ans.Type, id, ans.Detail, p))
			if ans.Engine() {
				mu.Lock()
				engines++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		err = withPartial(err, "deadline reached while asking sockets")
	}
	if engines > 0 {
		return fmt.Sprintf("exposed: a container engine API answered on %d of %d sockets", engines, len(socks)), err
	}
	return fmt.Sprintf("ok: no container engine API answered on %d sockets", len(socks)), err
}

// boundSockets are the paths of unix sockets bound in the sandbox's own
// network namespace (/proc/net/unix), which a search may not reach.
func boundSockets() []string { return unixsock.BoundSockets(engineSockets) }
