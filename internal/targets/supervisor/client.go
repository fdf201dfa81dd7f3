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
	"time"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// ErrGone means the sandbox instance (and its supervisor) ended.
var ErrGone = errors.New("the sandbox instance is gone")

// Client talks to one supervisor from the host.
type Client struct {
	Path string // the listening socket's path on the host
	// Gone, when closed, means the instance exited: calls stop waiting.
	Gone <-chan struct{}
	// Dial, when set, replaces dialing Path: a wrapped sandbox's init is
	// reached through its control connection (Control.Dial).
	Dial func(ctx context.Context) (*net.UnixConn, error)
	// WaitDelay bounds how long Exec waits for output after the command
	// exited, when a background process it left keeps the pipes open.
	WaitDelay time.Duration
}

func (c *Client) dial(ctx context.Context) (*net.UnixConn, error) {
	if c.Dial != nil {
		return c.Dial(ctx)
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, "unixpacket", c.Path)
	if err != nil {
		return nil, fmt.Errorf("supervisor: dial: %w", err)
	}
	return conn.(*net.UnixConn), nil
}

// call sends one request with descriptors and returns the connection for
// the replies.
func (c *Client) call(ctx context.Context, req Request, files []*os.File) (*net.UnixConn, error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	b, err := encode(req)
	if err != nil {
		conn.Close()
		return nil, err
	}
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = syscall.UnixRights(fds...)
	}
	if _, _, err := conn.WriteMsgUnix(b, oob, nil); err != nil {
		conn.Close()
		return nil, fmt.Errorf("supervisor: send: %w", err)
	}
	return conn, nil
}

// replies reads reply packets until the connection ends.
func replies(conn *net.UnixConn) <-chan Reply {
	ch := make(chan Reply, 4)
	go func() {
		defer close(ch)
		buf := make([]byte, maxPacket)
		for {
			n, err := conn.Read(buf)
			if err != nil || n == 0 {
				return
			}
			var r Reply
			if err := decodeReply(buf[:n], &r); err != nil {
				return
			}
			ch <- r
		}
	}()
	return ch
}

// one waits for a single reply.
func (c *Client) one(ctx context.Context, req Request) (Reply, error) {
	conn, err := c.call(ctx, req, nil)
	if err != nil {
		return Reply{}, err
	}
	defer conn.Close()
	select {
	case r, ok := <-replies(conn):
		if !ok {
			return Reply{}, errors.New("supervisor: no reply")
		}
		if r.Error != "" {
			return r, errors.New("supervisor: " + r.Error)
		}
		return r, nil
	case <-c.Gone:
		return Reply{}, ErrGone
	case <-ctx.Done():
		return Reply{}, ctx.Err()
	}
}

// Ping returns once the supervisor serves.
func (c *Client) Ping(ctx context.Context) error {
	r, err := c.one(ctx, Request{Op: OpPing})
	if err == nil && !r.Ready {
		err = errors.New("supervisor: not ready")
	}
	return err
}

// Signal sends sig to the process group of every running command and says
// how many it reached.
func (c *Client) Signal(ctx context.Context, sig syscall.Signal) (int, error) {
	r, err := c.one(ctx, Request{Op: OpSignal, Signal: int(sig)})
	return r.Signaled, err
}

// pipes are the host ends of one command's standard streams.
type pipes struct {
	child  []*os.File // sent to the supervisor, closed here once sent
	stdinW *os.File
	copies sync.WaitGroup
	reads  []*os.File // stdout/stderr read ends, closed to give up on them
}

func newPipes(cmd targets.Command) (*pipes, error) {
	p := &pipes{}
	in, err := inFile(cmd.Stdin, p)
	if err != nil {
		return p, err
	}
	p.child = append(p.child, in)
	out, err := outFile(cmd.Stdout, p)
	if err != nil {
		return p, err
	}
	p.child = append(p.child, out)
	if cmd.Stdout != nil && sameWriter(cmd.Stdout, cmd.Stderr) {
		// One pipe for both, as os/exec does: two copies into one writer
		// (a bytes.Buffer's ReadFrom) would race and lose output.
		p.child = append(p.child, out)
		return p, nil
	}
	errf, err := outFile(cmd.Stderr, p)
	if err != nil {
		return p, err
	}
	p.child = append(p.child, errf)
	return p, nil
}

// sameWriter says whether a and b are the same writer; a writer of a type
// that cannot be compared is never the same.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() { _ = recover() }()
	return a == b
}

func inFile(r io.Reader, p *pipes) (*os.File, error) {
	if r == nil {
		return os.Open(os.DevNull)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p.stdinW = pw
	return pr, nil
}

func outFile(w io.Writer, p *pipes) (*os.File, error) {
	if w == nil {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p.reads = append(p.reads, pr)
	p.copies.Add(1)
	go func() {
		defer p.copies.Done()
		_, _ = io.Copy(w, pr)
	}()
	return pw, nil
}

func (p *pipes) closeChild() {
	for _, f := range p.child {
		f.Close()
	}
	p.child = nil
}

// finish waits for the output copies, at most d, then gives up on them.
func (p *pipes) finish(d time.Duration) {
	if p.stdinW != nil {
		p.stdinW.Close()
	}
	done := make(chan struct{})
	go func() { p.copies.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
	for _, f := range p.reads {
		f.Close()
	}
	<-done
}
