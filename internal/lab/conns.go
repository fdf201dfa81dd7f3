package lab

import (
	"net"
	"net/netip"
	"sync"
)

// connSet keeps the lab's accepted TCP connections by their peer address,
// so that cutting a session's link can end its connections at once: with
// the link down no FIN or RST ever arrives, and a request in flight would
// otherwise hold its handler (and the lab's shutdown) until a timeout.
type connSet struct {
	mu    sync.Mutex
	conns map[*trackedConn]struct{}
	// cut are the peers whose link was cut: a connection from one that
	// the server accepts only now (it waited in the backlog while the
	// accept loop lagged) is ended at once, like those closed at the cut.
	cut map[netip.Addr]bool
}

type trackedConn struct {
	net.Conn
	set  *connSet
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.set.mu.Lock()
		delete(c.set.conns, c)
		c.set.mu.Unlock()
	})
	return c.Conn.Close()
}

type trackedListener struct {
	net.Listener
	set *connSet
}

func (l trackedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	tc := &trackedConn{Conn: c, set: l.set}
	l.set.mu.Lock()
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil && l.set.cut[ap.Addr().Unmap()] {
		l.set.mu.Unlock()
		_ = c.Close()
		// The server sees a connection that ends at once, as one from a
		// peer that vanished would.
		return tc, nil
	}
	if l.set.conns == nil {
		l.set.conns = map[*trackedConn]struct{}{}
	}
	l.set.conns[tc] = struct{}{}
	l.set.mu.Unlock()
	return tc, nil
}

// track wraps ln so that its connections can be ended by peer address.
func (s *connSet) track(ln net.Listener) net.Listener { return trackedListener{Listener: ln, set: s} }

// closeFrom ends every tracked connection whose peer is one of addrs, and
// every one accepted from them later, and returns how many it ended now.
func (s *connSet) closeFrom(addrs ...netip.Addr) int {
	s.mu.Lock()
	if s.cut == nil {
		s.cut = map[netip.Addr]bool{}
	}
	for _, a := range addrs {
		s.cut[a.Unmap()] = true
	}
	var victims []*trackedConn
	for c := range s.conns {
		ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ap.Addr().Unmap() == a.Unmap() {
				victims = append(victims, c)
			}
		}
	}
	s.mu.Unlock()
	for _, c := range victims {
		_ = c.Close()
	}
	return len(victims)
}

// forget drops addrs from the cut set: the session is detached and its
// addresses may go to a later session.
func (s *connSet) forget(addrs ...netip.Addr) {
	s.mu.Lock()
	for _, a := range addrs {
		delete(s.cut, a.Unmap())
	}
	s.mu.Unlock()
}
