package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// Socket endpoints the harness serves on the host file system, in folders
// it owns for one session. A path socket is reached through the file
// system, not the network, so the sandbox reaches it only if a mount hands
// it over: that is exactly the mistake these record.
const (
	EndpointEngineSocket = "engine-socket"     // a fake container-engine API socket
	EndpointCredSocket   = "credential-socket" // a fake credential-helper / agent socket
)

// ServeSocket listens on a new unix socket at path and records every
// connection as a hit of endpoint for session (the socket is that session's
// alone, so attribution needs no address). Each connection gets reply once
// its first bytes arrived (or after a short wait). The returned stop closes
// the listener, waits for connections in flight and removes the socket.
func (l *Lab) ServeSocket(ctx context.Context, path, endpoint, session string, reply []byte) (stop func(context.Context) error, err error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("lab: serve socket %s: %w", endpoint, err)
	}
	// The sandbox user is someone else on the host; a socket it cannot
	// open would test our mode bits, not the sandbox.
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("lab: serve socket %s: %w", endpoint, err)
	}
	closeConns := serveConns(ln, func(c net.Conn) { l.answerSocket(c, endpoint, session, path, reply) })
	var once sync.Once
	return func(context.Context) error {
		var err error
		once.Do(func() {
			err = closeConns() // each connection ends within its deadline
			if errors.Is(err, net.ErrClosed) {
				err = nil
			}
			if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				err = errors.Join(err, rerr)
			}
		})
		return err
	}, nil
}

func (l *Lab) answerSocket(c net.Conn, endpoint, session, path string, reply []byte) {
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	// Record before reading: a client that connects and sends nothing has
	// still reached the socket.
	buf := make([]byte, maxData)
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	n, _ := c.Read(buf)
	h := evidence.Hit{Endpoint: endpoint, Proto: "unix", Src: "unix:" + peer(c), Dst: path,
		Session: session, Data: printable(buf[:n]), Served: len(reply) > 0}
	h.Summary = fmt.Sprintf("unix connection, %d bytes: %s", n, h.Data)
	l.record(h, "")
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write(reply)
}

// peer names the connecting process by its credentials, for the evidence.
func peer(c net.Conn) string {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return "?"
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return "?"
	}
	var out string
	_ = raw.Control(func(fd uintptr) { out = peerCred(int(fd)) })
	return out
}
