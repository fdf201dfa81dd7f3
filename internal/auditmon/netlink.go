package auditmon

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"

	"github.com/elastic/go-libaudit/v2"
	"golang.org/x/sys/unix"
)

// pollNetlink is an audit netlink socket on Go's poller. The library's own
// client blocks in recvfrom, which closing the socket from another
// goroutine does not interrupt; here Close wakes a blocked Receive, so the
// source stops promptly.
type pollNetlink struct {
	f   *os.File
	rc  syscall.RawConn
	pid uint32 // the socket's port id
	seq atomic.Uint32
	buf []byte
}

func newPollNetlink() (*pollNetlink, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_AUDIT)
	if err != nil {
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind: %w", err)
	}
	sa, err := unix.Getsockname(fd)
	nl, ok := sa.(*unix.SockaddrNetlink)
	if err != nil || !ok {
		unix.Close(fd)
		return nil, fmt.Errorf("getsockname: %v", err)
	}
	// Bursts (a session's library loads) must not overflow the socket:
	// a lost record is a lost detection. Best effort.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	f := os.NewFile(uintptr(fd), "audit-netlink")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	// An audit record is at most MAX_AUDIT_MESSAGE_LENGTH (8970) bytes.
	return &pollNetlink{f: f, rc: rc, pid: nl.Pid, buf: make([]byte, unix.NLMSG_HDRLEN+10240)}, nil
}

func (c *pollNetlink) Send(msg syscall.NetlinkMessage) (uint32, error) {
	if msg.Header.Pid == 0 {
		msg.Header.Pid = c.pid
	}
	msg.Header.Seq = c.seq.Add(1)
	msg.Header.Len = uint32(unix.NLMSG_HDRLEN + len(msg.Data))
	b := make([]byte, msg.Header.Len)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], msg.Header.Len)
	ne.PutUint16(b[4:], msg.Header.Type)
	ne.PutUint16(b[6:], msg.Header.Flags)
	ne.PutUint32(b[8:], msg.Header.Seq)
	ne.PutUint32(b[12:], msg.Header.Pid)
	copy(b[unix.NLMSG_HDRLEN:], msg.Data)
	var serr error
	err := c.rc.Write(func(fd uintptr) bool {
		serr = unix.Sendto(int(fd), b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		return serr != unix.EAGAIN
	})
	return msg.Header.Seq, errors.Join(err, serr)
}

// Receive reads one message (the audit protocol sends one per datagram;
// its header length is not to be trusted). Blocking waits on the poller.
func (c *pollNetlink) Receive(nonBlocking bool, p libaudit.NetlinkParser) ([]syscall.NetlinkMessage, error) {
	var (
		n    int
		from unix.Sockaddr
		rerr error
	)
	err := c.rc.Read(func(fd uintptr) bool {
		n, from, rerr = unix.Recvfrom(int(fd), c.buf, unix.MSG_DONTWAIT)
		return nonBlocking || rerr != unix.EAGAIN
	})
	if err != nil {
		return nil, err
	}
	if rerr != nil {
		return nil, rerr
	}
	if nl, ok := from.(*unix.SockaddrNetlink); !ok || nl.Pid != 0 {
		return nil, errors.New("auditmon: a netlink message not from the kernel")
	}
	if n < unix.NLMSG_HDRLEN {
		return nil, fmt.Errorf("auditmon: short netlink message (%d bytes)", n)
	}
	return p(c.buf[:n])
}

func (c *pollNetlink) Close() error { return c.f.Close() }
