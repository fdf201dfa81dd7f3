package hostsession

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/hostproc"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// endInstance ends the sandbox leaves first, so that no process outlives
// its parent: a process whose parent died first is re-parented to the
// machine's pid 1, and on machines whose pid 1 never reaps (ours) it stays
// a zombie for good. The session's init is a subreaper, so it reaps every
// command and every escaped child; then the init goes, then whatever the
// runtime keeps above it, then the runtime, which we reap. cgroup.kill,
// after this, finds nothing left.
func (s *Session) endInstance(ctx context.Context) {
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
	killed := s.cg.killListed(s.cg.procs(), keep)
	kids, _ := filepath.Glob(filepath.Join(s.cg.dir, "*", "cgroup.procs"))
	for _, k := range kids {
		// A cgroup the sandbox made below the session's (cgroup
		// delegation): its processes are the session's too.
		killed = append(killed, s.cg.killListed((&Cgroup{dir: filepath.Dir(k)}).procs(), keep)...)
	}
	if frozen {
		_ = s.cg.thaw()
	}
	// Gone from the cgroup is not yet reaped: a dead process leaves
	// cgroup.procs as it exits and stays a zombie until its parent (the
	// init, a subreaper) waits for it. Killing the init first would hand
	// those zombies to the machine's pid 1.
	waitUntil(ctx, 2*time.Second, func() bool {
		for _, pid := range s.cg.procs() {
			if !keep[pid] {
				return false
			}
		}
		for _, pid := range killed {
			if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
				return false
			}
		}
		return true
	})
	// The init, then what the runtime keeps above it, bottom up.
	for i := len(chain) - 1; i >= 0; i-- {
		s.killChain(chain, i)
		if i == 0 {
			break
		}
		parent := chain[i-1]
		// Until its parent reaps it, a child (a zombie included) still
		// names that parent.
		waitUntil(ctx, time.Second, func() bool { return ppid(chain[i]) != parent })
	}
	select {
	case <-s.gone:
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
	}
}

// chain is the runtime's pid and its descendants down to the session's
// init (the one pinned at Start), top first; nil when it is gone. A
// wrapper may keep several processes of its own between the two.
func (s *Session) chain() []int {
	top := s.inst.Process.Pid
	if s.init == nil || !s.init.Alive() {
		return nil
	}
	var rev []int
	for pid := s.init.PID; pid > 1 && len(rev) < 16; pid = ppid(pid) {
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

// killChain kills chain[i] (see chain): the init and the runtime through
// their pins, those between once seen in the session's cgroup.
func (s *Session) killChain(chain []int, i int) {
	switch {
	case i == len(chain)-1 && s.init != nil && s.init.PID == chain[i]:
		_ = s.init.Signal(unix.SIGKILL)
	case i == 0 && s.leader != nil && s.leader.PID == chain[i]:
		_ = s.leader.Signal(unix.SIGKILL)
	default:
		s.cg.killListed(chain[i:i+1], nil)
	}
}

// killInstance ends the runtime's process group and waits for it to be
// reaped (without cgroup v2 this is the whole of the stop, with the
// namespace scan).
func (s *Session) killInstance(ctx context.Context) error {
	if s.inst == nil || s.inst.Process == nil {
		return nil
	}
	if s.leader != nil {
		// Through the pin: after a first stop reaped it, the number may
		// lead another group.
		_ = s.leader.SignalGroup(unix.SIGKILL)
	}
	select {
	case <-s.gone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s did not exit within 10 s of SIGKILL", s.Runtime)
	}
}

// killNetnsProcs kills anything still in the session's own namespace:
// without cgroup v2 this is what catches processes that left our process
// group. Only with network "lab" (the namespace is the session's); never
// in "host" mode, where the namespace is the lab's.
func (s *Session) killNetnsProcs(ctx context.Context) error {
	if s.netns == (NetnsID{}) || s.Profile.Network != profile.NetworkLab {
		return nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for wait := time.Millisecond; ; wait = min(2*wait, 20*time.Millisecond) {
		// By identity, not path: the harness may already have removed the
		// namespace's name while a leftover process still holds it.
		pids, err := s.netns.Pids()
		if err != nil || len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			// Pinned, and seen in the namespace still: the pid may be
			// another's since the scan.
			_ = hostproc.SignalIf(pid, unix.SIGKILL, hostproc.InNetns(s.netns.Dev, s.netns.Ino))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return errors.New("processes remain in the session namespace")
		}
		time.Sleep(wait)
	}
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

func waitUntil(ctx context.Context, d time.Duration, cond func() bool) {
	for deadline := time.Now().Add(d); !cond() && time.Now().Before(deadline) && ctx.Err() == nil; {
		time.Sleep(5 * time.Millisecond)
	}
}
