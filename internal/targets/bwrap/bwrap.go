// Package bwrap is the bubblewrap target, Gatehouse's default sandbox.
//
// A session is one sandbox instance, as on a real agent platform: Start
// runs, once, in the session's network namespace,
//
//	bwrap PROFILE-ARGS --uid U --gid G ... -- /gatehouse/.init init FD
//
// and every Exec of the session is a child of that init (package
// supervisor), so the session's commands share its namespaces, /tmp and
// processes. What runs is exactly the team's bubblewrap arguments, with only
// the identity, environment, the session's own files (a staging folder bound
// read-only at /gatehouse, with a writable /gatehouse/work) and the init
// added by us, and every source the harness provides bound from a door
// (see DoorDir).
//
// On the normal path bubblewrap runs as this run's own unprivileged host
// uid (RunUIDBase + pid), as platforms start it as an ordinary user, so the
// sandbox's user is that uid on the host, never root; on the assume-breach
// path it runs as root, as that path is root in the guest. Inspect reads
// which uid it is back from the kernel.
package bwrap

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"

	"github.com/gatehouse-dev/gatehouse/internal/scratch"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// Options configure the target.
type Options struct {
	Profile *profile.Profile // required: the arguments, paths, egress, env and resolver
	Root    string           // where staging folders go; "" means scratch.Dir() (root-only)
	Bwrap   string           // bubblewrap binary; "" means "bwrap" from PATH
	// Init is the host path of a static binary whose "init FD" mode is
	// supervisor.Main (the gatehouse-probe binary): it runs inside as the
	// sandbox's command and starts every Exec. Required.
	Init string
}

// Target starts bubblewrap sessions for one profile.
type Target struct {
	opts Options
	// The runtime's version, asked once per target rather than once per
	// session: the binary does not change during a run.
	versionOnce sync.Once
	version     string
	versionErr  error
	// Whether this bubblewrap runs as the run's uid, checked once.
	userOnce sync.Once
	userErr  error
}

// The run's uid is checked free once a process, before any session runs
// as it.
var (
	runUserOnce sync.Once
	runUserErr  error
)

var _ targets.Target = (*Target)(nil)

// New returns a bwrap target for the profile in opts.
func New(opts Options) *Target {
	if opts.Bwrap == "" {
		opts.Bwrap = "bwrap"
	}
	return &Target{opts: opts}
}

// Name is "bwrap".
func (t *Target) Name() string { return "bwrap" }

// hostEnv is the whole environment nsenter, nft and bwrap get: the
// harness's own variables (tokens, cloud credentials) never reach a sandbox,
// even one whose profile forgets --clearenv.
var hostEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

// Start prepares the staging folder, applies the egress ruleset and checks
// that the session cannot share the machine's network namespace.
func (t *Target) Start(ctx context.Context, spec targets.Spec) (targets.Session, error) {
	p := t.opts.Profile
	if p == nil {
		return nil, errors.New("bwrap: start: no profile")
	}
	if t.opts.Init == "" {
		return nil, errors.New("bwrap: start: no init binary (Options.Init): a session's commands run through a small init inside the sandbox; pass the gatehouse-probe binary")
	}
	if p.Target != "bwrap" {
		return nil, fmt.Errorf("bwrap: start: profile %s is for target %q", p.Name, p.Target)
	}
	if !spec.Path.Valid() {
		return nil, fmt.Errorf("bwrap: start: unknown path %q", spec.Path)
	}
	if err := checkNetwork(p, spec.Network); err != nil {
		return nil, fmt.Errorf("bwrap: start %s: %w", spec.Name, err)
	}
	t.versionOnce.Do(func() { t.version, t.versionErr = runtimeVersion(context.WithoutCancel(ctx), t.opts.Bwrap) })
	version, err := t.version, t.versionErr
	if err != nil {
		return nil, fmt.Errorf("bwrap: start: %w", err)
	}
	user := userFor(spec.Path)
	if !user.root() {
		// Once a process, before any session of ours runs as the uid.
		runUserOnce.Do(func() { runUserErr = checkRunUser(user) })
		t.userOnce.Do(func() { t.userErr = checkUserNamespaces(context.WithoutCancel(ctx), t.opts.Bwrap, user) })
		if err := errors.Join(runUserErr, t.userErr); err != nil {
			return nil, fmt.Errorf("bwrap: start %s on the %s path: %w", spec.Name, spec.Path, err)
		}
	}
	s := newSession(p, spec, version, user, t.opts.Init)
	if spec.Network.NetnsPath == "" {
		if s.ownNetns, s.spec.Network.NetnsPath, err = isolatedNetns(ctx); err != nil {
			return nil, fmt.Errorf("bwrap: start %s: %w", spec.Name, err)
		}
		s.spec.Network.NetnsName = s.ownNetns
	}
	err = s.prepare(ctx, t.opts)
	if err == nil {
		err = s.startInstance(ctx)
	}
	if err != nil {
		cerr := s.Cleanup(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("bwrap: start %s: %w", spec.Name, errors.Join(err, cerr))
	}
	return s, nil
}

func runtimeVersion(ctx context.Context, bin string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Env = hostEnv
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	v := strings.TrimSpace(string(out))
	if !strings.HasPrefix(v, "bubblewrap") {
		v = "bubblewrap " + v
	}
	return v, nil
}

// prepare builds everything a session needs; on error the caller cleans up.
func (s *session) prepare(ctx context.Context, opts Options) error {
	root := opts.Root
	if root == "" {
		// The harness's root-only scratch folder: in the shared /tmp, root
		// in another sandbox that sees the host's /tmp could swap this
		// session's init, policy files or work folder.
		var err error
		if root, err = scratch.Dir(); err != nil {
			return err
		}
	}
	st, err := newStage(root, stageName(s.spec))
	if err != nil {
		return err
	}
	s.st = st
	if err := s.Prepare(s.spec.Network.NetnsPath, "gatehouse-bwrap-"+st.id); err != nil {
		return err
	}
	binds, err := st.placeAll(s.spec.Files)
	if err != nil {
		return err
	}
	if s.prof.Egress != "" {
		if s.egress, err = applyEgress(ctx, s.spec.Network.NetnsPath, s.prof); err != nil {
			return err
		}
	}
	if err := st.initMountPoint(); err != nil {
		return err
	}
	l, err := buildLaunch(opts.Bwrap, s.prof, s.spec, st, binds, opts.Init, s.user)
	if err != nil {
		return err
	}
	s.prefix, s.fdFiles, s.doors = l.argv, l.fdFiles, l.doors
	if !s.user.root() {
		if err := handOver(ctx, s.user, st, l.places); err != nil {
			return err
		}
	}
	return nil
}
