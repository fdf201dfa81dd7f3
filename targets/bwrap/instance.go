package bwrap

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/auid"
	"github.com/gatehouse-dev/gatehouse/internal/hostproc"
	_ "github.com/gatehouse-dev/gatehouse/internal/mainthread" // keep locked goroutines off the main thread
	"github.com/gatehouse-dev/gatehouse/targets/supervisor"
)

// startTimeout bounds how long the sandbox may take to serve its first request.
const startTimeout = 15 * time.Second

// startInstance starts the session's one bubblewrap, with the init as its
// command, and waits until the init answers.
func (s *session) startInstance(ctx context.Context) error {
	sock, err := s.st.socket()
	if err != nil {
		return err
	}
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: sock, Net: "unixpacket"})
	if err != nil {
		return fmt.Errorf("init socket: %w", err)
	}
	ln.SetUnlinkOnClose(false) // the init keeps serving on its copy
	lf, err := ln.File()
	ln.Close()
	if err != nil {
		return fmt.Errorf("init socket: %w", err)
	}
	defer lf.Close()
	fds, err := openAll(s.fdFiles)
	defer closeAll(fds)
	if err != nil {
		return err
	}
	argv := instanceArgv(s.prefix, 3+len(fds))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = hostEnv
	// Not the harness's folder, which the run's user may not enter.
	cmd.Dir = "/"
	s.instOut = &limited{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = s.instOut, s.instOut
	cmd.ExtraFiles = append(fds, lf)
	cmd.WaitDelay = time.Second
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if !s.user.root() {
		// Go sets the death signal after the ids, so the change of user
		// does not clear it.
		attr.Credential = &syscall.Credential{Uid: uint32(s.user.uid), Gid: uint32(s.user.gid), Groups: []uint32{}}
	}
	if s.cg != nil {
		dir, err := s.cg.open()
		if err != nil {
			return err
		}
		defer dir.Close()
		attr.UseCgroupFD, attr.CgroupFD = true, int(dir.Fd())
	}
	cmd.SysProcAttr = attr
	started := make(chan error, 1)
	go func() {
		// The death signal (ours and bubblewrap's --die-with-parent) fires
		// when the thread that forked exits: this thread is locked and
		// lives exactly as long as bubblewrap. It also holds the private
		// mount namespace with the doors, and the session's network
		// namespace, which bubblewrap inherits.
		runtime.LockOSThread()
		err := enterDoors(s.doors)
		if err == nil {
			err = enterNet(s.spec.Network.NetnsPath)
		}
		if err == nil {
			// A login uid of the session's own: the key external monitors
			// (audit, Falco, Tetragon) see. Without it they match by
			// nothing here, which the results say; the session runs
			// either way.
			s.loginuid, s.loginuidErr = auid.Set()
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
		return fmt.Errorf("start bubblewrap: %w", err)
	}
	s.inst = cmd
	s.client = &supervisor.Client{Path: sock, Gone: s.gone, WaitDelay: waitDelay}
	pctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := s.client.Ping(pctx); err != nil {
		if errors.Is(err, supervisor.ErrGone) {
			return fmt.Errorf("the sandbox exited at start: %s", strings.TrimSpace(s.instOut.String()))
		}
		return fmt.Errorf("the sandbox's init did not answer: %w (bubblewrap said: %s)", err, strings.TrimSpace(s.instOut.String()))
	}
	// Pinned now, while nothing but bubblewrap and our init has run: every
	// later read from outside is of this process or of nothing.
	if s.init, err = pinInit(cmd.Process.Pid, s.cg, s.initBin); err != nil {
		return fmt.Errorf("the sandbox's init: %w", err)
	}
	return nil
}

// enterNet joins the network namespace at path on the calling (locked)
// thread, as nsenter --net would.
func enterNet(path string) error {
	if path == "" {
		return errors.New("no session network namespace")
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("join %s: %w", path, err)
	}
	return nil
}

// waitDelay bounds how long Exec waits for output pipes that a leftover
// background process keeps open after the command itself has exited.
const waitDelay = 5 * time.Second

// killInstance ends bubblewrap's process group (its own processes; the
// sandbox's die with it through --die-with-parent and the PID namespace)
// and waits for it to be reaped.
func (s *session) killInstance(ctx context.Context) error {
	if s.inst == nil || s.inst.Process == nil {
		return nil
	}
	if s.leader != nil {
		// Through the pin: after a first stop reaped it, the number may
		// lead another group.
		_ = s.leader.SignalGroup(unix.SIGKILL)
	}
	select {
	case <-s.gone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Second):
		return errors.New("bubblewrap did not exit within 10 s of SIGKILL")
	}
}

// limited keeps the first max bytes written to it.
type limited struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (l *limited) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.max - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *limited) String() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
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
