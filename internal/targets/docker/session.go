package docker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moby/moby/client"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// Session is one container.
type Session struct {
	t    *Target
	id   string         // the container
	cli  *client.Client // the target's
	path targets.Path
	net  *netPlan

	hasProbe atomic.Bool // the probe was copied to wire.SandboxPath

	mu    sync.Mutex
	execs map[string]bool // exec ids still running, for a process-scope Stop

	stopOnce sync.Once
	stopErr  error
	downOnce sync.Once
	downErr  error
}

var _ targets.Session = (*Session)(nil)

// ID is the container's id, for evidence and for tests.
func (s *Session) ID() string { return s.id }

// Stop does what the profile's stop scope says. Scope session (the
// default): the container goes, with every process in it and its
// anonymous volumes (teardown). Scope process: only the exec'd commands
// are signalled (stopProcesses), the careless stop; the container, and a
// child that left the command's process group, run on until Reap. Safe to
// call twice; the second call returns the first's result.
func (s *Session) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		if s.t.spec.StopScope == StopScopeProcess {
			s.stopErr = s.stopProcesses(context.WithoutCancel(ctx))
			return
		}
		s.stopErr = s.teardown(ctx)
	})
	return s.stopErr
}

// Reap is the harness's own teardown, not the platform's stop: it stops
// the session as the profile says, then removes the container and what
// Start made, whatever the stop scope. Safe to call more than once.
func (s *Session) Reap(ctx context.Context) error {
	serr := s.Stop(ctx)
	return errors.Join(serr, s.teardown(ctx))
}

// teardown removes the container (force, with its anonymous volumes) and
// releases the session network. Runs once.
func (s *Session) teardown(ctx context.Context) error {
	s.downOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		// One forced remove, not a stop then a remove: the daemon SIGKILLs
		// and deletes in one call, which is what a stop with a zero
		// timeout did anyway (the session is a sleep, and the stop-signal
		// gate measures how fast compute is gone), one API call and two
		// runtime calls (kill 15, kill 9) fewer.
		_, err := s.cli.ContainerRemove(ctx, s.ID(), client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		// After the container is gone: its namespace entry and ruleset go.
		err = errors.Join(err, s.net.release(ctx))
		if err != nil {
			s.downErr = fmt.Errorf("docker: stop: %w", err)
		}
	})
	return s.downErr
}

// track records a running exec; the returned func forgets it.
func (s *Session) track(id string) func() {
	s.mu.Lock()
	if s.execs == nil {
		s.execs = map[string]bool{}
	}
	s.execs[id] = true
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.execs, id)
		s.mu.Unlock()
	}
}

func (s *Session) running() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.execs))
	for id := range s.execs {
		out = append(out, id)
	}
	return out
}
