package probe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A minimal netlink client, enough for the takedown (takedown_net.go) to
// list and change nftables tables, links, routes and addresses from pure
// Go: sandboxes rarely ship nft or ip, and the probe must not need them.
// Every socket acts on the network namespace the probe runs in, which the
// takedown checks first (ownNamespace).

// nlTimeout bounds each wait for the kernel's answer.
const nlTimeout = 2 * time.Second

type nlConn struct {
	fd  int
	seq uint32
}

func dialNetlink(proto int) (*nlConn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	tv := unix.NsecToTimeval(nlTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink bind: %w", err)
	}
	return &nlConn{fd: fd, seq: uint32(time.Now().UnixNano())}, nil
}

func (c *nlConn) Close() { unix.Close(c.fd) }

// nlMsg is one message to send: header fields and the body after it.
type nlMsg struct {
	Type  uint16
	Flags uint16
	Body  []byte
	seq   uint32
}

func (c *nlConn) frame(msgs []*nlMsg) []byte {
	var b []byte
	for _, m := range msgs {
		c.seq++
		m.seq = c.seq
		h := make([]byte, unix.SizeofNlMsghdr)
		binary.NativeEndian.PutUint32(h[0:], uint32(unix.SizeofNlMsghdr+len(m.Body)))
		binary.NativeEndian.PutUint16(h[4:], m.Type)
		binary.NativeEndian.PutUint16(h[6:], m.Flags)
		binary.NativeEndian.PutUint32(h[8:], m.seq)
		b = append(b, h...)
		b = append(b, m.Body...)
		b = append(b, make([]byte, nlAlign(len(m.Body))-len(m.Body))...)
	}
	return b
}

func (c *nlConn) send(msgs []*nlMsg) error {
	return unix.Sendto(c.fd, c.frame(msgs), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
}

// recv reads one datagram and splits it into messages.
func (c *nlConn) recv() ([]syscall.NetlinkMessage, error) {
	buf := make([]byte, 64<<10)
	n, _, err := unix.Recvfrom(c.fd, buf, 0)
	if err != nil {
		if errors.Is(err, unix.EAGAIN) {
			return nil, fmt.Errorf("no answer from the kernel within %s", nlTimeout)
		}
		return nil, err
	}
	return syscall.ParseNetlinkMessage(buf[:n])
}

// dump sends one dump request and returns every answer up to NLMSG_DONE.
func (c *nlConn) dump(typ uint16, body []byte) ([]syscall.NetlinkMessage, error) {
	req := &nlMsg{Type: typ, Flags: unix.NLM_F_REQUEST | unix.NLM_F_DUMP, Body: body}
	if err := c.send([]*nlMsg{req}); err != nil {
		return nil, err
	}
	var out []syscall.NetlinkMessage
	for len(out) < 10000 {
		msgs, err := c.recv()
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			if m.Header.Seq != req.seq {
				continue
			}
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return out, nil
			case unix.NLMSG_ERROR:
				if err := nlErr(m); err != nil {
					return nil, err
				}
				return out, nil
			}
			out = append(out, m)
		}
	}
	return nil, errors.New("netlink dump: too many answers")
}

// exec sends msgs in one datagram (an nftables batch, or a single request
// with NLM_F_ACK) and waits for the acknowledgement of want. An error the
// kernel reports for any of them is returned.
func (c *nlConn) exec(want *nlMsg, msgs ...*nlMsg) error {
	if err := c.send(msgs); err != nil {
		return err
	}
	ours := map[uint32]bool{}
	for _, m := range msgs {
		ours[m.seq] = true
	}
	for i := 0; i < 100; i++ {
		got, err := c.recv()
		if err != nil {
			return err
		}
		for _, m := range got {
			if m.Header.Type != unix.NLMSG_ERROR || !ours[m.Header.Seq] {
				continue
			}
			if err := nlErr(m); err != nil {
				return err
			}
			if m.Header.Seq == want.seq {
				return nil
			}
		}
	}
	return errors.New("netlink: no acknowledgement")
}

// nlErr is the errno an NLMSG_ERROR carries (nil for an acknowledgement).
func nlErr(m syscall.NetlinkMessage) error {
	if len(m.Data) < 4 {
		return errors.New("netlink: short error message")
	}
	if code := int32(binary.NativeEndian.Uint32(m.Data[:4])); code != 0 {
		return syscall.Errno(-code)
	}
	return nil
}

func nlAlign(n int) int { return (n + 3) &^ 3 }

// nlAttr appends one attribute (type, then data, padded).
func nlAttr(b []byte, typ uint16, data []byte) []byte {
	h := make([]byte, 4)
	binary.NativeEndian.PutUint16(h[0:], uint16(4+len(data)))
	binary.NativeEndian.PutUint16(h[2:], typ)
	b = append(b, h...)
	b = append(b, data...)
	return append(b, make([]byte, nlAlign(len(data))-len(data))...)
}

// nlAttrs splits attributes into type -> data (nested and byte-order flags
// masked off; the first of a repeated type wins).
func nlAttrs(b []byte) map[uint16][]byte {
	out := map[uint16][]byte{}
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b[0:]))
		typ := binary.NativeEndian.Uint16(b[2:]) & 0x3fff
		if l < 4 || l > len(b) {
			break
		}
		if _, dup := out[typ]; !dup {
			out[typ] = b[4:l]
		}
		if nlAlign(l) >= len(b) {
			break
		}
		b = b[nlAlign(l):]
	}
	return out
}

// cString is a NUL-terminated attribute as a Go string.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
