package bwrap

import (
	"context"
	"errors"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/hostproc"
	"github.com/gatehouse-dev/gatehouse/targets/profile"
)

// Stop ends the session. With stop scope "session" (the default) that is
// the whole sandbox instance at once, as a container engine's forced remove
// is: its cgroup is killed, then its egress tables and staging folder go.
// With scope "process" (the careless stop) only the commands' own process
// groups are asked to end (SIGTERM, inside), and killed after the profile's
// stop grace; the instance and whatever left those groups run on until Reap.
// A second call returns the first call's result.
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

// signalCommands asks the init to signal every running command's group.
// An init that is gone has nothing left to signal.
func (s *session) signalCommands(ctx context.Context, sig syscall.Signal) {
	if s.client == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_, _ = s.client.Signal(ctx, sig)
}

// Reap is the harness's own teardown, not the platform's stop: it stops the
// session, then kills every process the session left (however it escaped)
// and removes what Start made, whatever the profile's stop scope says. Safe
// to call more than once, before or after Stop.
func (s *session) Reap(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	serr := s.Stop(ctx)
	s.reapOnce.Do(func() {
		s.reapErr = s.cleanup(ctx)
		waitFor(ctx, &s.wg, 10*time.Second)
	})
	return errors.Join(serr, s.reapErr)
}

// cleanup kills every process left in the session and removes what Start
// made. It is also used when Start fails halfway.
func (s *session) cleanup(ctx context.Context) error {
	var errs []error
	s.endInstance(ctx)
	if err := s.cg.destroy(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := s.killInstance(ctx); err != nil {
		errs = append(errs, err)
	}
	_ = s.init.Close()
	_ = s.leader.Close()
	if err := s.killNetnsProcs(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := s.egress.Flush(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := s.st.remove(); err != nil {
		errs = append(errs, err)
	}
	if err := deleteNetns(ctx, s.ownNetns); err != nil {
		errs = append(errs, err)
	} else {
		s.ownNetns = ""
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
	if s.spec.Network.NetnsPath == "" || s.prof.Network != profile.NetworkLab || s.netns == (nsID{}) {
		return nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for wait := time.Millisecond; ; wait = min(2*wait, 20*time.Millisecond) {
		// By identity, not path: the harness may already have removed the
		// namespace's name while a leftover process still holds it.
		pids, err := pidsInNetnsID(s.netns)
		if err != nil || len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			// Pinned, and seen in the namespace still: the pid may be
			// another's since the scan.
			_ = hostproc.SignalIf(pid, unix.SIGKILL, hostproc.InNetns(s.netns.dev, s.netns.ino))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return errors.New("processes remain in the session namespace")
		}
		time.Sleep(wait)
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
