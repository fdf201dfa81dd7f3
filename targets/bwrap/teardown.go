package bwrap

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"
)

// endInstance ends the sandbox leaves first, so that no process outlives
// its parent: a process whose parent died first is re-parented to the
// machine's pid 1, and on machines whose pid 1 never reaps (ours) it stays
// a zombie for good. The session's init is a subreaper, so it reaps every
// command and every escaped child; then the init goes, then bubblewrap,
// which we reap. cgroup.kill, after this, finds nothing left.
func (s *session) endInstance(ctx context.Context) {
	if s.cg == nil || s.inst == nil || s.inst.Process == nil {
		return
	}
	chain := s.chain()
	if len(chain) == 0 {
		return
	}
	keep := map[int]bool{}
	for _, pid := range chain {
		keep[pid] = true
	}
	// Frozen, nothing can fork while the rest is killed.
	frozen := s.cg.freeze(ctx) == nil
	s.cg.killListed(s.cg.procs(), keep)
	if frozen {
		_ = s.cg.thaw()
	}
	waitUntil(ctx, 2*time.Second, func() bool {
		for _, pid := range s.cg.procs() {
			if !keep[pid] {
				return false
			}
		}
		return true
	})
	// The init, then whatever bubblewrap keeps above it, bottom up.
	for i := len(chain) - 1; i >= 0; i-- {
		s.killChain(chain, i)
		if i == 0 {
			break
		}
		parent := chain[i-1]
		waitUntil(ctx, time.Second, func() bool { return !isParentOf(parent, chain[i]) })
	}
	select {
	case <-s.gone:
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
	}
}

// chain is bubblewrap's pid and its descendants down to the session's
// init (the one pinned at Start), top first; nil when it is gone.
func (s *session) chain() []int {
	top := s.inst.Process.Pid
	if s.init == nil || !s.init.Alive() {
		return nil
	}
	init := s.init.PID
	var rev []int
	for pid := init; pid > 1 && len(rev) < 8; pid = ppid(pid) {
		rev = append(rev, pid)
		if pid == top {
			out := make([]int, len(rev))
			for i, p := range rev {
				out[len(rev)-1-i] = p
			}
			return out
		}
	}
	return nil
}

// ppid reads a process's parent from /proc; 0 when it is gone.
func ppid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// isParentOf reports whether child still exists (a zombie included) as a
// child of parent: until its parent reaps it.
func isParentOf(parent, child int) bool {
	return ppid(child) == parent
}

func waitUntil(ctx context.Context, d time.Duration, cond func() bool) {
	for deadline := time.Now().Add(d); !cond() && time.Now().Before(deadline) && ctx.Err() == nil; {
		time.Sleep(5 * time.Millisecond)
	}
}

var errNoFreeze = errors.New("cgroup: no freezer")
