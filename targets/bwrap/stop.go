package bwrap

import (
	"context"
	"errors"
	"syscall"
	"time"

	"gatehouse/targets/profile"
)

// Stop asks running commands to end (SIGTERM), kills whatever is left after
// the profile's stop grace, then removes the session's cgroup, egress tables
// and staging folder. A second call returns the first call's result.
func (s *session) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.stopped = true
		pids := make([]int, 0, len(s.running))
		for pid := range s.running {
			pids = append(pids, pid)
		}
		s.mu.Unlock()

		for _, pid := range pids {
			_ = syscall.Kill(-pid, syscall.SIGTERM)
		}
		waitFor(ctx, &s.wg, s.prof.StopGrace())
		for _, pid := range pids {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		s.stopErr = s.cleanup(context.WithoutCancel(ctx))
		waitFor(ctx, &s.wg, 10*time.Second)
	})
	return s.stopErr
}

// cleanup kills every process left in the session and removes what Start
// made. It is also used when Start fails halfway.
func (s *session) cleanup(ctx context.Context) error {
	var errs []error
	if err := s.cg.destroy(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := s.killNetnsProcs(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := flushEgress(ctx, s.spec.Network.NetnsPath, s.tables); err != nil {
		errs = append(errs, err)
	}
	if err := s.st.remove(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return errors.Join(errors.New("bwrap: stop"), err)
	}
	return nil
}

// killNetnsProcs kills anything still in the session's own namespace:
// without cgroup v2 this is what catches processes that left our process
// group. Never in "host" mode, where the namespace is the lab's.
func (s *session) killNetnsProcs(ctx context.Context) error {
	netns := s.spec.Network.NetnsPath
	if netns == "" || s.prof.Network != profile.NetworkLab {
		return nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids, err := PidsInNetns(netns)
		if err != nil || len(pids) == 0 {
			return nil // a namespace already gone holds nothing
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return errors.New("processes remain in the session namespace")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type waiter interface{ Wait() }

// waitFor waits for w, at most d or until ctx is done.
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
