package probe

import (
	"context"
	"net"
	"strings"
	"sync"
	"syscall"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// dialNotes keeps what a network attempt did on its way to the peer: that
// a DNS answer reached it, and the addresses its connects began toward.
// For an attempt to a name, the harness proves a timeout by the kernel's
// count of opening packets toward those addresses; without them, only the
// lookup's packet would show, and a probe starved between the answer and
// its connect, on a loaded machine, would pass for a blocked one (issue 22).
type dialNotes struct {
	mu       sync.Mutex
	answered bool
	dialed   []string
}

type notesKey struct{}

// withNotes gives ctx a fresh record for one attempt's dials.
func withNotes(ctx context.Context) (context.Context, *dialNotes) {
	n := &dialNotes{}
	return context.WithValue(ctx, notesKey{}, n), n
}

// dialerFrom is the dialer for ctx: one that notes into ctx's record, or a
// plain one.
func dialerFrom(ctx context.Context) *net.Dialer {
	n, _ := ctx.Value(notesKey{}).(*dialNotes)
	if n == nil {
		return &net.Dialer{}
	}
	return &net.Dialer{
		// The probe is static, so Go's own resolver answers anyway; Dial
		// only lets it see the answer arrive.
		Resolver: &net.Resolver{PreferGo: true, Dial: n.dialDNS},
		// Called with the resolved address just before connect(2), which
		// sends a TCP SYN. A UDP connect sends nothing: doUDP notes its
		// address once the datagram is written (noteSent).
		Control: func(network, address string, _ syscall.RawConn) error {
			if !strings.HasPrefix(network, "udp") {
				n.noteSent(address)
			}
			return nil
		},
	}
}

// noteSent notes an address an opening packet went (or is going) toward.
func (n *dialNotes) noteSent(address string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.dialed) < wire.MaxDialed && len(address) <= wire.MaxDialedLen {
		n.dialed = append(n.dialed, address)
	}
}

// dialDNS dials the resolver's server and notes the first bytes read back.
// A UDP conn stays a *net.UDPConn underneath: the resolver tells datagram
// from stream by whether the conn is a net.PacketConn.
func (n *dialNotes) dialDNS(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	if u, ok := c.(*net.UDPConn); ok {
		return &answerUDP{UDPConn: u, n: n}, nil
	}
	return &answerConn{Conn: c, n: n}, nil
}

func (n *dialNotes) sawAnswer(k int) {
	if k > 0 {
		n.mu.Lock()
		n.answered = true
		n.mu.Unlock()
	}
}

type answerUDP struct {
	*net.UDPConn
	n *dialNotes
}

func (c *answerUDP) Read(b []byte) (int, error) {
	k, err := c.UDPConn.Read(b)
	c.n.sawAnswer(k)
	return k, err
}

type answerConn struct {
	net.Conn
	n *dialNotes
}

func (c *answerConn) Read(b []byte) (int, error) {
	k, err := c.Conn.Read(b)
	c.n.sawAnswer(k)
	return k, err
}

// fill copies the notes into the attempt's report. A racer of the dialer's
// that is still connecting may note more afterwards; that is dropped.
func (n *dialNotes) fill(rep *wire.Report) {
	n.mu.Lock()
	defer n.mu.Unlock()
	rep.Answered = n.answered
	rep.Dialed = append([]string(nil), n.dialed...)
}
