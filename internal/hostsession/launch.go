package hostsession

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/auid"
	"github.com/gatehouse-dev/gatehouse/internal/hostproc"
	_ "github.com/gatehouse-dev/gatehouse/internal/mainthread" // keep locked goroutines off the main thread
	"github.com/gatehouse-dev/gatehouse/internal/targets/supervisor"
)

// Launch starts cmd, the runtime with the init as its command, as the
// session's instance: a process group of its own, killed with the thread
// that forked it, started straight into the session's cgroup, with its
// output kept (Said). cmd.SysProcAttr may carry the credentials; Launch
// adds the rest.
//
// The thread that forks is locked and lives exactly as long as the
// runtime: the death signal fires when it exits. It first runs enter,
// which joins the session's namespaces (the runtime inherits them), and
// takes a login uid of the session's own: the key external monitors
// (audit, Falco, Tetragon) see. Without one they match by nothing, which
// the session keys say; the session runs either way.
func (s *Session) Launch(cmd *exec.Cmd, enter func() error) error {
	s.gone = make(chan struct{})
	s.out = &Output{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	attr := &syscall.SysProcAttr{}
	if cmd.SysProcAttr != nil {
		*attr = *cmd.SysProcAttr
	}
	// Go sets the death signal after the ids, so a change of user does
	// not clear it.
	attr.Setpgid, attr.Pdeathsig = true, syscall.SIGKILL
	if s.cg != nil {
		dir, err := s.cg.Open()
		if err != nil {
			return err
		}
		defer dir.Close()
		attr.UseCgroupFD, attr.CgroupFD = true, int(dir.Fd())
	}
	cmd.SysProcAttr = attr
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := enter()
		if err == nil {
			s.loginuid, _ = auid.Set()
			err = cmd.Start()
		}
		if err == nil {
			// Before the Wait below: not reaped yet, so the pid is its.
			s.leader, err = hostproc.PinChild(cmd.Process.Pid)
			if err != nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		}
		if err != nil {
			started <- err
			close(s.gone)
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(s.gone)
	}()
	if err := <-started; err != nil {
		return err
	}
	s.inst = cmd
	return nil
}

// Ready waits up to timeout for the init to answer through client (whose
// Gone must be the session's), then pins it.
func (s *Session) Ready(ctx context.Context, client *supervisor.Client, timeout time.Duration) error {
	s.client = client
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := client.Ping(pctx); err != nil {
		if errors.Is(err, supervisor.ErrGone) {
			return fmt.Errorf("%s exited at start: %s", s.Runtime, strings.TrimSpace(s.Said()))
		}
		return fmt.Errorf("the sandbox's init did not answer: %w (%s said: %s)", err, s.Runtime, strings.TrimSpace(s.Said()))
	}
	// Pinned now, while nothing but the runtime and our init has run:
	// every later read from outside is of this process or of nothing.
	var err error
	if s.init, err = s.pinInit(ctx); err != nil {
		return fmt.Errorf("the sandbox's init: %w", err)
	}
	return nil
}

// pinInit finds the session's init: the one process under the runtime
// (the process we started) running the init binary (the same file, by
// device and inode), among the session's processes. Never by name or
// /proc order: later, the sandbox can start processes of its own with that
// path and enough forks to sort first; now, nothing of its own has run.
func (s *Session) pinInit(ctx context.Context) (*hostproc.Proc, error) {
	var pids []int
	if s.cg != nil {
		var err error
		if pids, err = s.Processes(ctx); err != nil {
			return nil, err
		}
	} else {
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return hostproc.FindInit(s.inst.Process.Pid, pids, s.InitBin)
}

// Output keeps the first max bytes written to it.
type Output struct {
	mu  sync.Mutex
	max int
	b   []byte
}

// NewOutput keeps the first max bytes written.
func NewOutput(max int) *Output { return &Output{max: max} }

func (l *Output) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.max - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *Output) String() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}
