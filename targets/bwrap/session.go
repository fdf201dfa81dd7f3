package bwrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"sync"

	"github.com/gatehouse-dev/gatehouse/internal/hostproc"
	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/egress"
	"github.com/gatehouse-dev/gatehouse/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets/supervisor"
)

// errStopped is returned by every call on a stopped session.
var errStopped = errors.New("session stopped")

type session struct {
	// loginuid is the session's own login uid (0: not set, loginuidErr
	// says why), inherited by every process of the sandbox.
	loginuid    uint32
	loginuidErr error

	prof    *profile.Profile
	spec    targets.Spec
	runtime string
	st      *stage
	cg      *cgroup
	prefix  []string
	fdFiles []string
	doors   []door
	user    hostUser // who bubblewrap runs as on the host
	initBin string   // the init binary on the host
	// init is the session's init, pinned at Start: every read from
	// outside goes through it, never through a search of /proc.
	init *hostproc.Proc
	// leader is the runtime's own process (our child), pinned before it
	// can be reaped: its group is signalled through it, never by number.
	leader   *hostproc.Proc
	egress   *egress.Applied // the profile's ruleset, when it has one
	ownNetns string          // an empty namespace Start made for a session given none

	// The sandbox instance: bubblewrap running the init, and the init's
	// client. gone closes when bubblewrap has exited and been waited for.
	inst    *exec.Cmd
	client  *supervisor.Client
	gone    chan struct{}
	instOut *limited // what bubblewrap and the init printed (errors)

	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup // running Execs

	stopOnce sync.Once
	stopErr  error
	reapOnce sync.Once
	reapErr  error
	netns    nsID // identity of the session namespace, read at Start
}

var _ targets.Session = (*session)(nil)

// Exec runs one command as a child of the session's init. A non-zero exit
// is data; ctx cancellation kills the command's process group.
func (s *session) Exec(ctx context.Context, c targets.Command) (targets.Result, error) {
	if len(c.Args) == 0 {
		return targets.Result{}, errors.New("bwrap: exec: empty command")
	}
	if c.User != "" {
		return targets.Result{}, fmt.Errorf("bwrap: exec as %s: --unshare-user maps one uid into the sandbox: %w", c.User, targets.ErrUnsupported)
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return targets.Result{}, fmt.Errorf("bwrap: exec: %w", errStopped)
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	res, err := s.client.Exec(ctx, c)
	if err != nil {
		if errors.Is(err, supervisor.ErrGone) {
			err = fmt.Errorf("%w (bubblewrap said: %s)", err, s.instOut.String())
		}
		return res, fmt.Errorf("bwrap: exec %s: %w", c.Args[0], err)
	}
	return res, nil
}

// CopyIn writes a file into the staging folder; only paths under
// /gatehouse exist there.
func (s *session) CopyIn(ctx context.Context, path string, r io.Reader, mode fs.FileMode) error {
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if stopped {
		return fmt.Errorf("bwrap: copy in %s: %w", path, errStopped)
	}
	rel, ok := underInside(path)
	if !ok {
		return fmt.Errorf("bwrap: copy in %s: only paths under %s: %w", path, Inside, targets.ErrUnsupported)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bwrap: copy in %s: %w", path, err)
	}
	if err := s.st.write(rel, untrusted.WithContext(ctx, r), mode); err != nil {
		return fmt.Errorf("bwrap: copy in: %w", err)
	}
	return nil
}
