package docker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"gatehouse/targets"
)

// Session is one container.
type Session struct {
	t    *Target
	c    *testcontainers.DockerContainer
	cli  *client.Client
	path targets.Path
	net  *netPlan

	hasProbe atomic.Bool // the probe was copied to probe.SandboxPath
	stopOnce sync.Once
	stopErr  error
}

var _ targets.Session = (*Session)(nil)

// ID is the container's id, for evidence and for tests.
func (s *Session) ID() string { return s.c.GetContainerID() }

// Stop removes the container (force, with its anonymous volumes) and
// closes the client. Safe to call twice; the second call returns the
// first's result.
func (s *Session) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		// A zero stop timeout: the session is a sleep, and the stop-signal
		// gate measures how fast compute is gone.
		err := s.c.Terminate(ctx, testcontainers.StopTimeout(0))
		_ = s.cli.Close()
		// After the container is gone: its namespace entry and ruleset go.
		err = errors.Join(err, s.net.release(ctx))
		if err != nil {
			s.stopErr = fmt.Errorf("docker: stop: %w", err)
		}
	})
	return s.stopErr
}
