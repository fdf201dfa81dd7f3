package probe

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"
)

// askTimeout bounds one question to one unix socket.
const askTimeout = time.Second

// askUnix connects to the unix socket p, sends req and reads the answer
// (at most max bytes). See exchange for why a failed write is not the end.
func askUnix(ctx context.Context, p string, req []byte, max int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "unix", p)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	dl, _ := ctx.Deadline()
	_ = c.SetDeadline(dl)
	b, err := exchange(c, req, max)
	if err != nil && len(b) == 0 && ctx.Err() != nil {
		// The deadline and the close on ctx race; either way the peer
		// said nothing in time, and callers must see a timeout.
		err = ctx.Err()
	}
	return b, err
}

// exchange writes req to c and reads the answer. A peer may answer and
// close before it reads anything (a credential helper that speaks first,
// a server that does not care what was asked): the write then fails with
// EPIPE, or the read ends with ECONNRESET after the answer, and the answer
// is still in our receive queue. What the peer sent is the fact that
// matters, so it is always read, and a write or reset error is returned
// only when nothing arrived.
func exchange(c net.Conn, req []byte, max int) ([]byte, error) {
	_, werr := c.Write(req)
	b, rerr := readSome(c, max)
	if len(b) > 0 {
		if rerr != nil && !peerGone(rerr) && !isTimeout(rerr) {
			return b, rerr
		}
		return b, nil
	}
	if werr != nil {
		return nil, werr
	}
	return nil, rerr
}

// peerGone: the peer closed its end (before or after reading).
func peerGone(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
