package hostsession

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// Stop ends the session. With stop scope "session" (the default) that is
// the whole sandbox instance at once, as a container engine's forced
// remove is: every process of its cgroup, leaves first, then what the
// target made (Release). With scope "process" (the careless stop) only the
// commands' own process groups are asked to end (SIGTERM, inside), and
// killed after the profile's stop grace; the instance and whatever left
// those groups run on until Reap. A second call returns the first call's
// result.
func (s *Session) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.stopped = true
		s.mu.Unlock()
		if s.Profile.Scope() == profile.StopProcess {
			s.signalCommands(ctx, syscall.SIGTERM)
			waitFor(ctx, &s.wg, s.Profile.StopGrace())
			s.signalCommands(ctx, syscall.SIGKILL)
			return
		}
		s.stopErr = s.Cleanup(context.WithoutCancel(ctx))
		waitFor(ctx, &s.wg, 10*time.Second)
	})
	return s.stopErr
}

// signalCommands asks the init to signal every running command's group.
// An init that is gone has nothing left to signal.
func (s *Session) signalCommands(ctx context.Context, sig syscall.Signal) {
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
func (s *Session) Reap(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	serr := s.Stop(ctx)
	s.reapOnce.Do(func() {
		s.reapErr = s.Cleanup(ctx)
		waitFor(ctx, &s.wg, 10*time.Second)
	})
	return errors.Join(serr, s.reapErr)
}

// Cleanup kills every process left in the session and removes what Start
// made, the target's part (Release) last. Also used when Start fails
// halfway; safe to call again.
func (s *Session) Cleanup(ctx context.Context) error {
	var errs []error
	s.endInstance(ctx)
	if s.Control != nil {
		_ = s.Control.Close()
	}
	if err := s.cg.Destroy(ctx); err != nil {
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
	if s.Release != nil {
		if err := s.Release(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return errors.Join(errors.New(s.Name+": stop"), err)
	}
	return nil
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
