package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	osexec "os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/hostsession"
	"github.com/gatehouse-dev/gatehouse/internal/scratch"
	"github.com/gatehouse-dev/gatehouse/internal/targets/egress"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/internal/targets/supervisor"
	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// startTimeout bounds how long the wrapper may take to serve its first request.
const startTimeout = 30 * time.Second

// session is one wrapper instance. The host side it shares with every
// process target (cgroup, start, stop and reap, processes, session keys,
// reads from outside) is the embedded kit, whose Name is "exec" or
// "firejail".
type session struct {
	*hostsession.Session

	prof    *profile.Profile
	spec    targets.Spec
	runtime string
	st      *stage
	argv    []string // the wrapper's argv with the init appended
	env     []string // the wrapper's environment
	view    view
	egress  *egress.Applied
	policy  map[string]string // {{file:NAME}} -> sha256 digest
}

var (
	_ targets.Session       = (*session)(nil)
	_ targets.ProcessLister = (*session)(nil)
	_ targets.SessionKeyer  = (*session)(nil)
)

// newSession is a session of profile p on spec for target name, not
// started.
func newSession(name string, p *profile.Profile, spec targets.Spec, version, initBin string) *session {
	s := &session{prof: p, spec: spec, runtime: version}
	s.Session = &hostsession.Session{Name: name, Runtime: "the wrapper", Profile: p, InitBin: initBin, Release: s.release}
	return s
}

// release removes what Start made besides the instance, once nothing of
// it runs: the egress tables and the staging folder.
func (s *session) release(ctx context.Context) error {
	return errors.Join(s.egress.Flush(ctx), s.st.remove())
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
	if err := ensureMountPoint(); err != nil {
		return err
	}
	st, err := newStage(root, stageName(s.spec))
	s.st = st
	if err != nil {
		return err
	}
	id := s.prof.Identity(s.spec.Path)
	if err := st.own(id.UID, id.GID); err != nil {
		return fmt.Errorf("stage: %w", err)
	}
	if err := s.Prepare(s.spec.Network.NetnsPath, "gatehouse-exec-"+st.id); err != nil {
		return err
	}
	binds, err := st.placeAll(s.spec.Files)
	if err != nil {
		return err
	}
	if ws := *WorkspaceOf(s.prof); ws != "" {
		// The folder the platform hands the agent, read-write at
		// /workspace in the wrapper's view of the host, as a platform that
		// starts the wrapper in the project's checkout would.
		host, err := targets.Expand(ws, s.spec)
		if err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
		if err := ensureDir(profile.WorkspacePath); err != nil {
			return err
		}
		// Checked now, for a clear error; bound through the descriptor.
		spec := s.spec
		open := func() (*os.File, error) {
			f, ok, err := targets.OpenPlace(spec, host)
			if err == nil && !ok {
				err = fmt.Errorf("%s is no place of the run's", host)
			}
			return f, err
		}
		f, err := open()
		if err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
		f.Close()
		binds = append(binds, bind{host: host, inside: profile.WorkspacePath, rw: true, open: open})
	}
	if s.prof.Egress != "" && s.spec.Network.NetnsPath != "" {
		data, err := s.prof.EgressRules()
		if err != nil {
			return err
		}
		if s.egress, err = egress.Apply(ctx, s.spec.Network.NetnsPath, s.prof.Egress, data); err != nil {
			return err
		}
	}
	for _, b := range opts.Binds {
		if err := MountPoint(b); err != nil {
			return err
		}
	}
	s.view = view{st: st, init: opts.Init, binds: binds, harness: opts.Binds, keepNetns: s.spec.Network.NetnsPath}
	resolver := s.prof.Resolver
	if resolver == "" {
		resolver = s.spec.Network.Resolver
	}
	if resolver != "" {
		if s.view.resolv, err = st.policyFile("resolv.conf", []byte("nameserver "+resolver+"\n")); err != nil {
			return err
		}
	}
	if s.argv, s.policy, err = s.wrapperArgv(); err != nil {
		return err
	}
	s.argv = opts.tool(s.argv)
	w := s.prof.Wrapper()
	if err := st.workFiles(s.prof, w, id.UID, id.GID); err != nil {
		return err
	}
	env := map[string]string{}
	for k, v := range baseEnv {
		env[k] = v
	}
	for k, v := range s.prof.Env {
		x, err := targets.Expand(v, s.spec)
		if err != nil {
			return fmt.Errorf("env %s: %w", k, err)
		}
		env[k] = x
	}
	for k, v := range w.Env {
		env[k] = v
	}
	s.env = envList(env)
	return nil
}

// startInstance starts the wrapper once, with the init as its command and
// the control socket as its stdin, and waits until the init answers.
func (s *session) startInstance(ctx context.Context) error {
	ctl, child, err := supervisor.NewControl()
	if err != nil {
		return err
	}
	s.Control = ctl
	defer child.Close()
	cmd := &osexec.Cmd{Path: s.argv[0], Args: s.argv, Env: s.env, Dir: InsideWork, Stdin: child, WaitDelay: time.Second}
	if lp, err := osexec.LookPath(s.argv[0]); err == nil {
		cmd.Path = lp
	} else {
		return fmt.Errorf("wrapper %s: %w", s.argv[0], err)
	}
	if id := s.prof.Identity(s.spec.Path); id.UID != 0 || id.GID != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(id.UID), Gid: uint32(id.GID), Groups: []uint32{}}}
	}
	// The thread that starts the wrapper holds the session's namespaces:
	// its network namespace and a private mount namespace (the view).
	err = s.Launch(cmd, func() error {
		if err := enterNet(s.spec.Network.NetnsPath); err != nil {
			return err
		}
		return s.view.enter()
	})
	if err != nil {
		return fmt.Errorf("start wrapper: %w", err)
	}
	client := &supervisor.Client{Dial: ctl.Dial, Gone: s.Gone(), WaitDelay: hostsession.WaitDelay}
	return s.Ready(ctx, client, startTimeout)
}

// wrapperArgv expands the profile's wrapper argv and appends the init.
func (s *session) wrapperArgv() ([]string, map[string]string, error) {
	w := s.prof.Wrapper()
	policy := map[string]string{}
	hosts := map[string]string{}
	for name, key := range w.Files {
		data, _ := s.prof.File(key)
		// Under /gatehouse, which the wrapper (as the path's user) can read
		// in its mount namespace; the staging folder itself is root's only.
		if err := s.st.write(".policy/"+name, bytes.NewReader(data), 0o444); err != nil {
			return nil, nil, err
		}
		hosts[name] = Inside + "/.policy/" + name
		policy[name] = digest(data)
	}
	var argv []string
	for i, a := range w.Argv {
		var bad error
		x := profile.WrapperRef.ReplaceAllStringFunc(a, func(m string) string {
			ref := strings.Trim(m, "{}")
			if name, ok := strings.CutPrefix(ref, "file:"); ok {
				return hosts[name]
			}
			if s.spec.Network.NetnsName == "" {
				bad = errors.New("{{netns}}: this session has no named network namespace")
			}
			return s.spec.Network.NetnsName
		})
		if bad != nil {
			return nil, nil, fmt.Errorf("wrapper argument %d: %w", i, bad)
		}
		x, err := targets.Expand(x, s.spec)
		if err != nil {
			return nil, nil, fmt.Errorf("wrapper argument %d: %w", i, err)
		}
		argv = append(argv, x)
	}
	return append(argv, InitPath, "init", "0"), policy, nil
}

// Exec runs one command as a child of the session's init, with Spec.Env
// and Command.Env over the init's environment (the wrapper's proxy
// variables excepted: see supervisor.dropProxy).
func (s *session) Exec(ctx context.Context, c targets.Command) (targets.Result, error) {
	if len(c.Args) == 0 {
		return targets.Result{}, fmt.Errorf("%s: exec: empty command", s.Name)
	}
	if c.User != "" {
		return targets.Result{}, fmt.Errorf("%s: exec as %s: the wrapper starts once as the path's user: %w", s.Name, c.User, targets.ErrUnsupported)
	}
	env := make(map[string]string, len(s.spec.Env)+len(c.Env))
	for k, v := range s.spec.Env {
		env[k] = v
	}
	for k, v := range c.Env {
		env[k] = v
	}
	c.Env = env
	if c.Dir == "" {
		c.Dir = InsideWork
	}
	res, err := s.Run(ctx, c)
	if err != nil {
		return res, fmt.Errorf("%s: exec %s: %w", s.Name, c.Args[0], err)
	}
	return res, nil
}

// CopyIn writes a file into the staging folder; only paths under
// /gatehouse are the session's own.
func (s *session) CopyIn(ctx context.Context, path string, r io.Reader, mode fs.FileMode) error {
	if s.Stopped() {
		return fmt.Errorf("%s: copy in %s: %w", s.Name, path, hostsession.ErrStopped)
	}
	rel, ok := underInside(path)
	if !ok {
		return fmt.Errorf("%s: copy in %s: the wrapper shows the host's own file system outside %s: %w", s.Name, path, Inside, targets.ErrUnsupported)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: copy in %s: %w", s.Name, path, err)
	}
	if err := s.st.write(rel, untrusted.WithContext(ctx, r), mode); err != nil {
		return fmt.Errorf("%s: copy in: %w", s.Name, err)
	}
	return nil
}
