package probe

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"time"
)

// udpReplyWait bounds how long a UDP attempt waits for a reply: a silent
// peer is normal, and the harness judges UDP by the endpoint's log anyway.
const udpReplyWait = 500 * time.Millisecond

// doTCP connects, writes the payload and reads until EOF, readCap bytes or
// the deadline. A connection that was made is "completed" even when the
// peer stays silent: reaching it is the fact that matters.
func doTCP(ctx context.Context, s Step, rep *Report) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", s.Target)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if data := s.data(); len(data) > 0 {
		if _, err := conn.Write(data); err != nil {
			return err
		}
	}
	buf, err := readSome(conn, readCap)
	rep.Bytes = len(buf)
	rep.Excerpt = string(buf)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// doUDP sends the payload and briefly waits for one reply. A send without
// error is "completed"; a refusal seen on the reply is noted in Error.
func doUDP(ctx context.Context, s Step, rep *Report) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "udp", s.Target)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.Write(s.data()); err != nil {
		return err
	}
	wait := time.Now().Add(udpReplyWait)
	if dl, ok := ctx.Deadline(); ok && dl.Before(wait) {
		wait = dl
	}
	_ = conn.SetReadDeadline(wait)
	buf := make([]byte, readCap)
	n, err := conn.Read(buf)
	rep.Bytes = n
	rep.Excerpt = string(buf[:n])
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		rep.Error = clip("reply: "+err.Error(), MaxErrorLen)
	}
	return nil
}

// readSome reads until EOF, max bytes or an error.
func readSome(r io.Reader, max int) ([]byte, error) {
	buf := make([]byte, max)
	n := 0
	for n < max {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return buf[:n], err
		}
	}
	return buf[:n], nil
}

// data is what a tcp or udp step sends.
func (s Step) data() []byte {
	if s.Binary != nil {
		return s.Binary
	}
	return []byte(s.Payload)
}
