package exec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/targets/profile"
)

// Stop ends the session. With stop scope "session" (the default) that is
// the whole wrapper instance: every process of its cgroup, leaves first,
// then the egress tables and the staging folder. With scope "process" only
// the commands' own process groups are signalled (SIGTERM, then SIGKILL
// after the profile's grace); the rest runs on until Reap. A second call
// returns the first call's result.
func (s *session) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.stopped = true
		s.mu.Unlock()
		if s.prof.Scope() == profile.StopProcess {
			s.signalCommands(ctx, syscall.SIGTERM)
			waitFor(ctx, &s.wg, s.prof.StopGrace())
			s.signalCommands(ctx, syscall.SIGKILL)
			return
		}
		s.stopErr = s.cleanup(context.WithoutCancel(ctx))
		waitFor(ctx, &s.wg, 10*time.Second)
	})
	return s.stopErr
}

func (s *session) signalCommands(ctx context.Context, sig syscall.Signal) {
	if s.client == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_, _ = s.client.Signal(ctx, sig)
}

// Reap is the harness's own teardown: Stop, then everything the session
// left, whatever the profile's stop scope says. Safe to call more than once.
func (s *session) Reap(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	serr := s.Stop(ctx)
	s.reapOnce.Do(func() {
		s.reapErr = s.cleanup(ctx)
		waitFor(ctx, &s.wg, 10*time.Second)
	})
	return errors.Join(serr, s.reapErr)
}

// cleanup kills every process of the session and removes what Start made.
// Also used when Start fails halfway.
func (s *session) cleanup(ctx context.Context) error {
	var errs []error
	s.endInstance(ctx)
	if s.ctl != nil {
		_ = s.ctl.Close()
	}
	if err := s.cg.destroy(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := s.killInstance(ctx); err != nil {
		errs = append(errs, err)
	}
	_ = s.init.Close()
	_ = s.leader.Close()
	if err := s.egress.Flush(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := s.st.remove(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return errors.Join(errors.New(s.name+": stop"), err)
	}
	return nil
}

// endInstance ends the sandbox leaves first, so that no process outlives
// its parent (an orphan goes to the machine's pid 1, which on our machines
// never reaps): everything but the chain from the wrapper down to the init
// (the init reaps them as a subreaper), then the chain bottom up.
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
	frozen := s.cg.freeze(ctx) == nil
	killed := s.cg.killListed(s.cg.procs(), keep)
	kids, _ := filepath.Glob(filepath.Join(s.cg.dir, "*", "cgroup.procs"))
	for _, k := range kids {
		killed = append(killed, s.cg.killListed((&cgroup{dir: filepath.Dir(k)}).procs(), keep)...)
	}
	if frozen {
		_ = s.cg.thaw()
	}
	// Gone from the cgroup is not yet reaped: a dead process leaves
	// cgroup.procs as it exits and stays a zombie until its parent (the
	// init, a subreaper) waits for it. Killing the init first would hand
	// those zombies to the machine's pid 1, which here never reaps.
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
	for i := len(chain) - 1; i >= 0; i-- {
		s.killChain(chain, i)
		if i == 0 {
			break
		}
		parent := chain[i-1]
		waitUntil(ctx, time.Second, func() bool { return ppid(chain[i]) != parent })
	}
	select {
	case <-s.gone:
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
	}
}

// chain is the wrapper's pid and its descendants down to the init (the
// one pinned at Start), top first; nil when it is gone.
func (s *session) chain() []int {
	top := s.inst.Process.Pid
	if s.init == nil || !s.init.Alive() {
		return nil
	}
	init := s.init.PID
	var rev []int
	for pid := init; pid > 1 && len(rev) < 16; pid = ppid(pid) {
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

// killInstance ends the wrapper's process group and waits for it to be
// reaped (without cgroup v2 this is the whole of the stop).
func (s *session) killInstance(ctx context.Context) error {
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
		return errors.New("the wrapper did not exit within 10 s of SIGKILL")
	}
}

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

type waiter interface{ Wait() }

func waitFor(ctx context.Context, w waiter, d time.Duration) {
	done := make(chan struct{})
	go func() { w.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	}
}

var errNoFreeze = errors.New("cgroup: no freezer")
