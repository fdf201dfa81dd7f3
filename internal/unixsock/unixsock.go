// Package unixsock asks unix sockets questions, read-only and bounded:
// whether one is a container engine's API (AskEngine), what a peer says to
// a request (Ask), which sockets are bound (BoundSockets). The probe asks
// from inside a sandbox, the harness from outside on the host, the same way.
package unixsock

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"
)

// askTimeout bounds one question to one unix socket, unless the context
// says otherwise (WithAskTimeout).
const askTimeout = time.Second

type askTimeoutKey struct{}

// WithAskTimeout makes every question asked under ctx wait up to d for
// an answer, in place of one second: the harness asks from outside with
// more time than the probe, whose attempt must cover many sockets.
func WithAskTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, askTimeoutKey{}, d)
}

func askTimeoutOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(askTimeoutKey{}).(time.Duration); ok && d > 0 {
		return d
	}
	return askTimeout
}

// readCap bounds an engine's answer.
const readCap = 4096

// Ask connects to the unix socket p, sends req and reads the answer
// (at most max bytes). See exchange for why a failed write is not the end.
func Ask(ctx context.Context, p string, req []byte, max int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, askTimeoutOf(ctx))
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
	b, rerr := ReadSome(c, max)
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

// ReadSome reads until EOF, max bytes or an error.
func ReadSome(r io.Reader, max int) ([]byte, error) {
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

// WellKnownSockets are where engines put their API socket.
var WellKnownSockets = []string{
	"/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock",
	"/run/podman/podman.sock", "/var/run/crio/crio.sock", "/run/k3s/containerd/containerd.sock",
	"/var/run/cri-dockerd.sock", "/run/buildkit/buildkitd.sock",
}

// BoundSockets lists, at most max, the paths of the unix sockets bound in
// the caller's network namespace (/proc/net/unix): the probe's inside the
// sandbox, the harness's on the host.
func BoundSockets(max int) []string {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() && len(out) < max {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 8 && strings.HasPrefix(fields[7], "/") {
			out = append(out, fields[7])
		}
	}
	return out
}
