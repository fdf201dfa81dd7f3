package probe

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/unixsock"
)

// udpReplyWait bounds how long a UDP attempt waits for a reply: a silent
// peer is normal, and the harness judges UDP by the endpoint's log anyway.
const udpReplyWait = 500 * time.Millisecond

// doTCP connects, writes the payload and reads until EOF, readCap bytes or
// the deadline. A connection that was made is "completed" even when the
// peer stays silent: reaching it is the fact that matters.
func doTCP(ctx context.Context, s wire.Step, rep *wire.Report) error {
	ctx, notes := withNotes(ctx)
	defer notes.fill(rep)
	conn, err := dialerFrom(ctx).DialContext(ctx, "tcp", s.Target)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if data := dataOf(s); len(data) > 0 {
		if _, err := conn.Write(data); err != nil {
			return err
		}
	}
	buf, err := unixsock.ReadSome(conn, readCap)
	rep.Bytes = len(buf)
	rep.Excerpt = string(buf)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// doUDP sends the payload and briefly waits for one reply. A send without
// error is "completed"; a refusal seen on the reply is noted in Error.
func doUDP(ctx context.Context, s wire.Step, rep *wire.Report) error {
	ctx, notes := withNotes(ctx)
	defer notes.fill(rep)
	conn, err := dialerFrom(ctx).DialContext(ctx, "udp", s.Target)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.Write(dataOf(s)); err != nil {
		return err
	}
	notes.noteSent(conn.RemoteAddr().String())
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
		rep.Error = clip("reply: "+err.Error(), wire.MaxErrorLen)
	}
	return nil
}

// dataOf is what a tcp or udp step sends.
func dataOf(s wire.Step) []byte {
	if s.Binary != nil {
		return s.Binary
	}
	return []byte(s.Payload)
}

// bodyOf is the request body a step sends (Body, or Body repeated to Fill).
func bodyOf(s wire.Step) string {
	if s.Fill <= len(s.Body) || s.Body == "" {
		return s.Body
	}
	n := min(s.Fill, wire.MaxFill)
	return strings.Repeat(s.Body, n/len(s.Body)+1)[:n]
}
