package bwrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"gatehouse/targets"
	"gatehouse/targets/egress"
	"gatehouse/targets/profile"
)

// errStopped is returned by every call on a stopped session.
var errStopped = errors.New("session stopped")

// waitDelay bounds how long Exec waits for output pipes that a leftover
// background process keeps open after the command itself has exited.
const waitDelay = 5 * time.Second

type session struct {
	prof     *profile.Profile
	spec     targets.Spec
	runtime  string
	st       *stage
	cg       *cgroup
	prefix   []string
	fdFiles  []string
	egress   *egress.Applied // the profile's ruleset, when it has one
	ownNetns string          // an empty namespace Start made for a session given none

	mu      sync.Mutex
	stopped bool
	running map[int]struct{} // pids (= process group ids) of running Execs
	nexec   int
	wg      sync.WaitGroup

	stopOnce sync.Once
	stopErr  error
	reapOnce sync.Once
	reapErr  error
	netns    nsID // identity of the session namespace, read at Start
}

var _ targets.Session = (*session)(nil)

// Exec runs one command in a fresh bubblewrap. A non-zero exit is data;
// ctx cancellation kills the process group and the Exec's cgroup.
func (s *session) Exec(ctx context.Context, c targets.Command) (targets.Result, error) {
	argv, err := execArgv(s.prefix, c)
	if err != nil {
		return targets.Result{}, fmt.Errorf("bwrap: exec: %w", err)
	}
	fds, err := openAll(s.fdFiles)
	defer closeAll(fds)
	if err != nil {
		return targets.Result{}, fmt.Errorf("bwrap: exec: %w", err)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = hostEnv
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	cmd.ExtraFiles = fds
	cmd.WaitDelay = waitDelay
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.SysProcAttr = attr

	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return targets.Result{}, fmt.Errorf("bwrap: exec: %w", errStopped)
	}
	s.nexec++
	cg, err := s.cg.child(fmt.Sprintf("exec-%d", s.nexec))
	if err != nil {
		s.mu.Unlock()
		return targets.Result{}, fmt.Errorf("bwrap: exec: %w", err)
	}
	if cg != nil {
		dir, err := cg.open()
		if err != nil {
			s.mu.Unlock()
			return targets.Result{}, fmt.Errorf("bwrap: exec: %w", err)
		}
		defer dir.Close()
		attr.UseCgroupFD, attr.CgroupFD = true, int(dir.Fd())
	}
	cmd.Cancel = func() error {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return cg.kill()
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		cg.removeIfEmpty()
		return targets.Result{}, fmt.Errorf("bwrap: exec: %w", err)
	}
	pid := cmd.Process.Pid
	s.running[pid] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()

	werr := cmd.Wait()
	res := targets.Result{ExitCode: -1, Duration: time.Since(start)}
	s.mu.Lock()
	delete(s.running, pid)
	s.mu.Unlock()
	s.wg.Done()
	cg.removeIfEmpty()

	if cmd.ProcessState != nil {
		res.ExitCode = exitCode(cmd.ProcessState)
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("bwrap: exec %s: %w", c.Args[0], ctx.Err())
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) && !errors.Is(werr, exec.ErrWaitDelay) {
		return res, fmt.Errorf("bwrap: exec %s: %w", c.Args[0], werr)
	}
	return res, nil
}

// exitCode follows the shell convention for signals (128+n).
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func openAll(names []string) ([]*os.File, error) {
	var out []*os.File
	for _, n := range names {
		f, err := os.Open(n)
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
	return out, nil
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
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
	if err := s.st.write(rel, r, mode); err != nil {
		return fmt.Errorf("bwrap: copy in: %w", err)
	}
	return nil
}
