// Package hostsession is the kit every target that runs its sandbox as a
// host process embeds (internal/targets/bwrap, internal/targets/exec): one runtime process
// (bubblewrap, a team's wrapper) started once per session with the
// session's init as its command, in a cgroup of its own.
//
// The kit owns what such a session does the same whichever runtime it
// starts: the cgroup (every process of the session, however it escaped
// its process group), the start (a locked thread in the session's
// namespaces, a login uid of the session's own, the runtime pinned before
// it can be reaped, the init pinned while nothing of the sandbox's own has
// run), the stop and the harness's own teardown (leaves first, every kill
// through a pin), and what is read from outside (processes, session keys,
// the init's namespaces and ids). The target keeps its argv, its staging,
// its egress and its words.
package hostsession

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/hostproc"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/internal/targets/supervisor"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// ErrStopped is returned by every call on a stopped session.
var ErrStopped = errors.New("session stopped")

// WaitDelay bounds how long Exec waits for output pipes that a leftover
// background process keeps open after the command itself has exited.
const WaitDelay = 5 * time.Second

// Session is the host side of one sandbox instance. A target fills the
// exported fields before Prepare and embeds the Session in its own, which
// then has Stop, Reap, Processes and SessionKeys.
type Session struct {
	Name    string           // the target, in errors: "bwrap", "exec", "firejail"
	Runtime string           // the process started, in messages: "bubblewrap", "the wrapper"
	Profile *profile.Profile // the stop scope and grace, the network mode
	InitBin string           // the init binary on the host: the init is found by this file
	// Release removes what the target made besides the instance (egress
	// tables, staging folder, a namespace of its own) once every process
	// of the session is gone. May be nil.
	Release func(ctx context.Context) error
	// Control, when set, is closed once the instance has ended (the
	// init's control connection).
	Control io.Closer

	cg       *Cgroup
	netns    NetnsID // the session namespace's identity, read at Prepare
	loginuid uint32  // the session's own login uid; 0: not set

	// init is the session's init, pinned at Start: every read from
	// outside goes through it, never through a search of /proc.
	init *hostproc.Proc
	// leader is the runtime's own process (our child), pinned before it
	// can be reaped: its group is signalled through it, never by number.
	leader *hostproc.Proc
	inst   *exec.Cmd
	client *supervisor.Client
	gone   chan struct{} // closed when the runtime has exited and been waited for
	out    *Output       // what the runtime and the init printed (errors)

	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup // running calls

	stopOnce sync.Once
	stopErr  error
	reapOnce sync.Once
	reapErr  error
}

// Prepare reads the identity of the session's network namespace (netns,
// "" for none) and makes the session's cgroup, named cgroupName under our
// own; without cgroup v2 the session has none and relies on process
// groups and the namespace scan.
func (s *Session) Prepare(netns, cgroupName string) error {
	if netns != "" {
		id, err := ReadNetnsID(netns)
		if err != nil {
			return fmt.Errorf("session namespace: %w", err)
		}
		s.netns = id
	}
	cg, err := NewCgroup(cgroupName)
	s.cg = cg
	return err
}

// Cgroup is the session's cgroup; nil without cgroup v2.
func (s *Session) Cgroup() *Cgroup { return s.cg }

// Init is the session's init, pinned at Start; nil before.
func (s *Session) Init() *hostproc.Proc { return s.init }

// Gone closes when the runtime has exited and been waited for.
func (s *Session) Gone() <-chan struct{} { return s.gone }

// Said is the start of what the runtime and the init printed.
func (s *Session) Said() string { return s.out.String() }

// Stopped reports whether Stop has begun.
func (s *Session) Stopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// Run runs c as a child of the session's init; a non-zero exit is data.
// Stop waits for running calls (up to its bound). Errors are not prefixed
// with the target's name: the caller words them.
func (s *Session) Run(ctx context.Context, c targets.Command) (targets.Result, error) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return targets.Result{}, ErrStopped
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	res, err := s.client.Exec(ctx, c)
	if errors.Is(err, supervisor.ErrGone) {
		err = fmt.Errorf("%w (%s said: %s)", err, s.Runtime, s.Said())
	}
	return res, err
}
