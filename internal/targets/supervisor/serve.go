package supervisor

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Main is the supervisor inside the sandbox. Its one argument is the number
// of the inherited listening descriptor. It serves until the sandbox ends.
func Main(args []string, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: init FD  (FD: the listening socket the harness passed; 0: a control connection on stdin)")
		return 2
	}
	if args[0] == "0" {
		return serveControl(stderr)
	}
	fd, err := strconv.Atoi(args[0])
	if err != nil || fd < 3 {
		fmt.Fprintf(stderr, "init: %q is not a descriptor number >= 3\n", args[0])
		return 2
	}
	// No command may inherit the way in.
	syscall.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "supervisor")
	ln, err := net.FileListener(f)
	f.Close()
	if err != nil {
		fmt.Fprintln(stderr, "init: listen:", err)
		return 1
	}
	ul, ok := ln.(*net.UnixListener)
	if !ok {
		fmt.Fprintf(stderr, "init: descriptor %d is not a unix socket\n", fd)
		return 1
	}
	s := newServer(false)
	for {
		c, err := ul.AcceptUnix()
		if err != nil {
			fmt.Fprintln(stderr, "init: accept:", err)
			return 1
		}
		go s.handle(c)
	}
}

// newServer starts the reaper. wrapped: the sandbox was started by a
// wrapper whose proxy settings win (see mergeEnv).
func newServer(wrapped bool) *server {
	s := &server{running: map[int]chan syscall.WaitStatus{}, wrapped: wrapped}
	// Orphans (a command's child that escaped with setsid) come to us, so
	// they are reaped instead of left as zombies of a process outside.
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	go s.reap()
	return s
}

// conn is one call's connection as the server uses it: *net.UnixConn for
// an accepted connection, *fileConn for one received over the control
// connection.
type conn interface {
	ReadMsgUnix(b, oob []byte) (n, oobn, flags int, addr *net.UnixAddr, err error)
	Read(b []byte) (int, error)
	Write(b []byte) (int, error)
	Close() error
}

type server struct {
	wrapped bool
	// mu is held around fork+register and around every wait4, so a command
	// that exits at once cannot be reaped before its waiter is registered.
	mu      sync.Mutex
	running map[int]chan syscall.WaitStatus // by pid (= process group id)
}

func (s *server) handle(c conn) {
	defer c.Close()
	buf := make([]byte, maxPacket)
	oob := make([]byte, unix.CmsgSpace(3*4))
	n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return
	}
	fds := rights(oob[:oobn])
	defer closeFDs(fds)
	for _, fd := range fds {
		// Not inherited by commands forked meanwhile: a stray copy of another
		// command's pipe would keep its output open.
		syscall.CloseOnExec(fd)
	}
	if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		send(c, Reply{Error: "request truncated"})
		return
	}
	req, err := decodeRequest(buf[:n])
	if err != nil {
		send(c, Reply{Error: err.Error()})
		return
	}
	switch req.Op {
	case OpPing:
		send(c, Reply{Ready: true})
	case OpSignal:
		send(c, Reply{Signaled: s.signalAll(syscall.Signal(req.Signal))})
	case OpExec:
		if len(fds) != 3 {
			send(c, Reply{Error: fmt.Sprintf("exec needs 3 descriptors, got %d", len(fds))})
			return
		}
		s.exec(c, req, fds)
	}
}

// exec runs one command and answers Started, then Exited. When the host
// hangs up first (its context was cancelled), the command's process group
// is killed.
func (s *server) exec(c conn, req Request, fds []int) {
	extra := req.Env
	if s.wrapped {
		extra = dropProxy(os.Environ(), extra)
	}
	env := mergeEnv(os.Environ(), extra)
	path, err := lookPath(req.Args[0], env)
	if err != nil {
		_, _ = syscall.Write(fds[2], []byte(fmt.Sprintf("init: %s: %v\n", req.Args[0], err)))
		send(c, Reply{Exited: true, Code: 127, Error: err.Error()})
		return
	}
	attr := &syscall.ProcAttr{
		Dir:   req.Dir,
		Env:   env,
		Files: []uintptr{uintptr(fds[0]), uintptr(fds[1]), uintptr(fds[2])},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	s.mu.Lock()
	pid, err := syscall.ForkExec(path, req.Args, attr)
	done := make(chan syscall.WaitStatus, 1)
	if err == nil {
		s.running[pid] = done
	}
	s.mu.Unlock()
	if err != nil {
		// On the command's stderr too, as for 127: the host reads the exit
		// code and stderr, and a bare 126 did not say why.
		_, _ = syscall.Write(fds[2], []byte(fmt.Sprintf("init: fork/exec %s: %v\n", path, err)))
		send(c, Reply{Exited: true, Code: 126, Error: err.Error()})
		return
	}
	closeFDs(fds)
	send(c, Reply{Started: true, Pid: pid})
	hangup := make(chan struct{})
	go func() {
		b := make([]byte, 64)
		_, _ = c.Read(b) // EOF when the host gives up
		close(hangup)
	}()
	var ws syscall.WaitStatus
	select {
	case ws = <-done:
	case <-hangup:
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		ws = <-done
	}
	r := Reply{Exited: true, Code: ws.ExitStatus()}
	if ws.Signaled() {
		r.Signal = int(ws.Signal())
		r.Code = 128 + r.Signal
	}
	send(c, r)
}

func (s *server) signalAll(sig syscall.Signal) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for pid := range s.running {
		if syscall.Kill(-pid, sig) == nil {
			n++
		}
	}
	return n
}

func send(c conn, r Reply) {
	if b, err := encode(r); err == nil {
		_, _ = c.Write(b)
	}
}

func rights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if fs, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, fs...)
		}
	}
	return fds
}

func closeFDs(fds []int) {
	for i, fd := range fds {
		if fd >= 0 {
			_ = syscall.Close(fd)
			fds[i] = -1
		}
	}
}
