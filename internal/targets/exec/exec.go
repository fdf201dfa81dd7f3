// Package exec is the generic wrapper target: a team's own sandbox command
// (firejail, srt, codex sandbox, a script of its own) run unmodified.
//
// A session is one wrapper instance running the session's init (package
// supervisor, "init 0" mode):
//
//	WRAPPER-ARGV... /gatehouse/.init init 0
//
// started as the path's user, in the session's network namespace, in a
// private mount namespace where /etc/resolv.conf names the session's
// resolver and /gatehouse is the session's staging folder (read-only, with a
// writable /gatehouse/work). Its stdin is the init's control connection:
// one end of a SOCK_SEQPACKET socketpair, over which each Exec hands the
// init a fresh connection as a descriptor. See docs/exec-target.md.
package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/hostsession"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// Options configure the target.
type Options struct {
	Profile *profile.Profile // required: target exec or firejail
	Root    string           // where staging folders go; "" means scratch.Dir() (root-only)
	// Init is the host path of the static gatehouse-probe binary, whose
	// "init 0" mode serves the session. Required.
	Init string
	// Tools replace a wrapper's first word (and its version command's) by
	// a command: "srt" -> [node, cli.js] from Gatehouse's cache. Targets
	// srt and codex-sandbox need theirs (see internal/targets/realwrap).
	Tools map[string][]string
	// Binds are folders of the harness bound read-write into the
	// wrapper's view, each over a root-owned mount point on the host
	// (srt's TMPDIR: see internal/targets/realwrap).
	Binds []Bind
}

// tool replaces argv's first word by its command in Tools, if any.
func (o Options) tool(argv []string) []string {
	if len(argv) == 0 {
		return argv
	}
	if cmd, ok := o.Tools[argv[0]]; ok {
		return append(append([]string(nil), cmd...), argv[1:]...)
	}
	return argv
}

// Target starts wrapper sessions for one profile.
type Target struct {
	opts Options

	versionOnce sync.Once
	version     string
	versionErr  error
}

var _ targets.Target = (*Target)(nil)

// New returns a wrapper target for the profile in opts.
func New(opts Options) *Target { return &Target{opts: opts} }

// Name is the profile's target: "exec" or "firejail".
func (t *Target) Name() string {
	if p := t.opts.Profile; p != nil && p.IsWrapper() {
		return p.Target
	}
	return KindExec
}

// baseEnv is what the wrapper gets before the profile's env: the harness's
// own variables (tokens, cloud credentials) never reach a sandbox.
var baseEnv = map[string]string{"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

// Start prepares the staging folder and the egress ruleset, then starts the
// wrapper with the init and waits until the init answers.
func (t *Target) Start(ctx context.Context, spec targets.Spec) (targets.Session, error) {
	p := t.opts.Profile
	name := t.Name()
	if p == nil || !p.IsWrapper() {
		return nil, fmt.Errorf("%s: start: the profile is not for target exec or firejail", name)
	}
	if t.opts.Init == "" {
		return nil, fmt.Errorf("%s: start: no init binary (Options.Init): pass the gatehouse-probe binary", name)
	}
	if !spec.Path.Valid() {
		return nil, fmt.Errorf("%s: start: unknown path %q", name, spec.Path)
	}
	if err := checkNetwork(p, spec.Network); err != nil {
		return nil, fmt.Errorf("%s: start %s: %w", name, spec.Name, err)
	}
	version, err := t.runtimeVersion(ctx, spec.Network.NetnsPath)
	if err != nil {
		return nil, fmt.Errorf("%s: start: %w", name, err)
	}
	s := newSession(name, p, spec, version, t.opts.Init)
	err = s.prepare(ctx, t.opts)
	if err == nil {
		err = s.startInstance(ctx)
	}
	if err != nil {
		cerr := s.Cleanup(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("%s: start %s: %w", name, spec.Name, errors.Join(err, cerr))
	}
	return s, nil
}

// runtimeVersion runs the profile's version command once per target, in
// the session's network namespace (or an empty one): a wrapper that checks
// for updates must not reach a real network from here.
func (t *Target) runtimeVersion(ctx context.Context, netns string) (string, error) {
	t.versionOnce.Do(func() {
		w := t.opts.Profile.Wrapper()
		w.Version = t.opts.tool(w.Version)
		if len(w.Version) == 0 {
			t.version = w.Argv[0] + " (the profile gives no version command)"
			return
		}
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		cmd := osexec.CommandContext(ctx, w.Version[0], w.Version[1:]...)
		cmd.Env = envList(baseEnv)
		out := hostsession.NewOutput(4096)
		cmd.Stdout, cmd.Stderr = out, out
		err := runIn(netns, cmd, func() error { return cmd.Run() })
		if err != nil {
			t.versionErr = fmt.Errorf("%s: %w: %s", strings.Join(w.Version, " "), err, strings.TrimSpace(out.String()))
			return
		}
		line, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
		t.version = strings.TrimSpace(line)
		name := filepath.Base(t.opts.Profile.Wrapper().Argv[0])
		switch {
		case t.version == "":
			t.version = name + " (its version command printed nothing)"
		case !strings.Contains(strings.ToLower(t.version), strings.ToLower(name)):
			// A bare number ("0.0.83") says nothing on its own in a matrix.
			t.version = name + " " + t.version
		}
	})
	return t.version, t.versionErr
}

// ErrSharedNetwork means the wrapper would start in the machine's own
// network namespace. Never allowed: packets from there reach real networks.
var ErrSharedNetwork = errors.New("refusing to run a sandbox in the machine's own network namespace")

// checkNetwork decides, before anything is created, where the wrapper runs:
// the session's namespace when the harness gives one (never the machine's
// own), otherwise a new empty one made for the wrapper alone.
func checkNetwork(p *profile.Profile, n targets.Network) error {
	if n.NetnsPath == "" {
		if p.Network == profile.NetworkLab {
			return fmt.Errorf("profile %s wants network lab but no session namespace was given", p.Name)
		}
		return nil
	}
	if startNetErr != nil {
		return fmt.Errorf("check network namespace: our own: %w", startNetErr)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(n.NetnsPath, &st); err != nil {
		return fmt.Errorf("check network namespace: %w", err)
	}
	if st.Dev == startNet.Dev && st.Ino == startNet.Ino {
		return fmt.Errorf("%w: %s is the namespace this process started in", ErrSharedNetwork, n.NetnsPath)
	}
	// pid 1's may be hidden from us (as on our CI machines), and is then
	// compared only when it is not.
	same, err := sameFile(n.NetnsPath, "/proc/1/ns/net")
	if err != nil && !errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("check network namespace: %w", err)
	}
	if same {
		return fmt.Errorf("%w: %s is the same namespace as /proc/1/ns/net", ErrSharedNetwork, n.NetnsPath)
	}
	return nil
}

// startNet is the network namespace this process started in, read while
// package initialisation holds the main thread. Not /proc/self/ns/net at
// check time: that names the main thread's namespace, and a goroutine that
// locked the main thread and joined a session's namespace (runIn) leaves
// it there, since Go parks the main thread instead of ending it; every
// later session in that namespace was then refused as "the machine's".
var startNet, startNetErr = func() (syscall.Stat_t, error) {
	var st syscall.Stat_t
	err := syscall.Stat("/proc/thread-self/ns/net", &st)
	return st, err
}()

func envList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}
