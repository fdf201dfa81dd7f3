package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Control mode ("init 0") is for sandboxes started by a wrapper the harness
// does not write (firejail, srt, codex): such wrappers close descriptors
// above 2 and may forbid creating AF_UNIX sockets inside, but they pass
// standard input through. So the harness gives the wrapper one end of a
// SOCK_SEQPACKET socketpair as its stdin, and the init reads, from that
// control connection, one packet per call carrying one descriptor: the
// init's end of a fresh socketpair, which it then serves exactly as an
// accepted connection. Receiving a descriptor creates no socket, so a
// seccomp filter against socket(AF_UNIX) does not stop it.

// ControlFD is the descriptor the init reads its control connection from.
const ControlFD = 0

// Control is the host end of an init's control connection.
type Control struct {
	mu     sync.Mutex
	fd     int
	closed bool
}

// NewControl makes the control socketpair. child is for the wrapper's
// stdin; the caller closes it once the wrapper has started.
func NewControl() (*Control, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("supervisor: control socketpair: %w", err)
	}
	return &Control{fd: fds[0]}, os.NewFile(uintptr(fds[1]), "init-control"), nil
}

// Dial hands the init a fresh connection and returns the host's end of it.
func (c *Control) Dial(ctx context.Context) (*net.UnixConn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("supervisor: socketpair: %w", err)
	}
	c.mu.Lock()
	if c.closed {
		err = ErrGone
	} else {
		err = unix.Sendmsg(c.fd, []byte{'c'}, unix.UnixRights(fds[1]), nil, unix.MSG_NOSIGNAL)
	}
	c.mu.Unlock()
	unix.Close(fds[1])
	if err != nil {
		unix.Close(fds[0])
		if errors.Is(err, unix.EPIPE) || errors.Is(err, unix.ECONNRESET) {
			err = ErrGone
		}
		return nil, fmt.Errorf("supervisor: control: %w", err)
	}
	f := os.NewFile(uintptr(fds[0]), "supervisor-conn")
	defer f.Close()
	conn, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("supervisor: control: %w", err)
	}
	return conn.(*net.UnixConn), nil
}

// Close hangs up: the init exits when it reads the end of its control
// connection. Safe to call twice.
func (c *Control) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	return unix.Close(c.fd)
}

// serveControl is Main's control mode.
func serveControl(stderr io.Writer) int {
	// Off stdin, close-on-exec: no command may inherit the way in.
	cfd, err := unix.FcntlInt(ControlFD, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		fmt.Fprintln(stderr, "init: control descriptor:", err)
		return 1
	}
	if null, err := os.Open(os.DevNull); err == nil {
		_ = unix.Dup2(int(null.Fd()), ControlFD)
		null.Close()
	}
	if t, err := unix.GetsockoptInt(cfd, unix.SOL_SOCKET, unix.SO_TYPE); !controlSocket(cfd, t, err) {
		fmt.Fprintln(stderr, "init 0: standard input is not the harness's SOCK_SEQPACKET socket: the wrapper replaced it (a pipe or a terminal?)")
		return 1
	}
	s := newServer(true)
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(cfd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			fmt.Fprintln(stderr, "init: control:", err)
			return 1
		}
		if n == 0 && oobn == 0 {
			return 0 // the harness hung up: the session is over
		}
		for _, fd := range rights(oob[:oobn]) {
			c, err := newFileConn(fd)
			if err != nil {
				fmt.Fprintln(stderr, "init: control: received connection:", err)
				_ = unix.Close(fd)
				continue
			}
			go s.handle(c)
		}
	}
}

// fileConn serves a connection received over the control socket with
// nothing but read, write and recvmsg. net.FileConn would ask the socket
// its type (getsockopt SO_TYPE) and address (getsockname), which a
// wrapper's seccomp filter may refuse: Codex's sandbox with the network off
// answers EPERM to both, and every call was then dropped unanswered. The
// descriptor came from the harness, which made it SOCK_SEQPACKET.
type fileConn struct {
	f  *os.File
	rc syscall.RawConn
}

func newFileConn(fd int) (*fileConn, error) {
	// Non-blocking, so the runtime poller serves it and Close wakes a
	// goroutine blocked in Read (the hang-up watch of a running command).
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "conn")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &fileConn{f: f, rc: rc}, nil
}

func (c *fileConn) ReadMsgUnix(b, oob []byte) (n, oobn, flags int, addr *net.UnixAddr, err error) {
	rerr := c.rc.Read(func(fd uintptr) bool {
		n, oobn, flags, _, err = unix.Recvmsg(int(fd), b, oob, unix.MSG_CMSG_CLOEXEC)
		return !errors.Is(err, unix.EAGAIN)
	})
	if err == nil {
		err = rerr
	}
	if err == nil && n == 0 && oobn == 0 {
		err = io.EOF
	}
	return n, oobn, flags, nil, err
}

func (c *fileConn) Read(b []byte) (int, error)  { return c.f.Read(b) }
func (c *fileConn) Write(b []byte) (int, error) { return c.f.Write(b) }
func (c *fileConn) Close() error                { return c.f.Close() }

// controlSocket says whether fd can be the control socket. A wrapper's
// seccomp filter may refuse getsockopt while recvmsg still works (Codex's
// sandbox with the network off answers EPERM): any socket then passes, and
// a socket of the wrong kind fails at the first recvmsg instead.
func controlSocket(fd, sotype int, err error) bool {
	if err == nil {
		return sotype == unix.SOCK_SEQPACKET
	}
	var st unix.Stat_t
	return !errors.Is(err, unix.ENOTSOCK) && unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK
}
