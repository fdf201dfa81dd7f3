package lab

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// A request hit needs a complete request to reach a handler. A
// TLS-intercepting proxy that refuses our self-signed certificate, or a
// client that connects and sends garbage, never gets that far, yet the
// connection arrived: that is already a forbidden contact. tapListener
// records each connection when it is accepted (with its TLS server name or
// first bytes), then hands it, bytes intact, to the HTTP server, whose
// request hit follows. Verdicts fold the two into one contact
// (evidence.Fold); the trace keeps both.
type tapListener struct {
	net.Listener
	record func(c net.Conn, first []byte)
	conns  chan net.Conn
	done   chan struct{} // closed by Close
	once   sync.Once
	busy   *busySet       // counts connections until recorded
	wg     sync.WaitGroup // the accept loop and the sniffers
}

// tap wraps ln (below any TLS layer) so that every accepted connection is
// recorded as a "connection" hit of endpoint.
func (l *Lab) tap(ln net.Listener, endpoint string) net.Listener {
	t := &tapListener{Listener: ln, conns: make(chan net.Conn), done: make(chan struct{}), busy: &l.busy}
	t.record = func(c net.Conn, first []byte) {
		summary, data := firstBytes(first)
		h := evidence.Hit{Endpoint: endpoint, Proto: "tcp", Conn: true,
			Src: c.RemoteAddr().String(), Dst: c.LocalAddr().String(), Data: data}
		h.Summary = fmt.Sprintf("connection to %s: %s", c.LocalAddr(), summary)
		l.record(h, h.Src)
	}
	t.wg.Add(1)
	go t.loop()
	return t
}

// loop accepts and sniffs each connection in its own goroutine, so a client
// that sends nothing delays no one else.
func (t *tapListener) loop() {
	defer t.wg.Done()
	for {
		c, err := t.Listener.Accept()
		if err != nil {
			return // closed
		}
		t.wg.Add(1)
		if t.busy != nil {
			t.busy.add(c.RemoteAddr(), 1)
		}
		go func() {
			defer t.wg.Done()
			first := sniff(c)
			t.record(c, first)
			if t.busy != nil {
				t.busy.add(c.RemoteAddr(), -1)
			}
			pc := &prefixConn{Conn: c, r: io.MultiReader(bytes.NewReader(first), c)}
			select {
			case t.conns <- pc:
			case <-t.done:
				c.Close()
			}
		}()
	}
}

// Accept returns connections already recorded.
func (t *tapListener) Accept() (net.Conn, error) {
	select {
	case c := <-t.conns:
		return c, nil
	case <-t.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting and waits for the sniffers (each ends within
// sniffWait).
func (t *tapListener) Close() error {
	var err error
	t.once.Do(func() {
		close(t.done)
		err = t.Listener.Close()
		t.wg.Wait()
	})
	return err
}

// prefixConn replays the sniffed bytes before reading on. Deadlines still
// apply to the connection underneath.
type prefixConn struct {
	net.Conn
	r io.Reader
}

func (c *prefixConn) Read(p []byte) (int, error) { return c.r.Read(p) }
