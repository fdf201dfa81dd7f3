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
	if l.set.conns == nil {
		l.set.conns = map[*trackedConn]struct{}{}
	}
	l.set.conns[tc] = struct{}{}
	l.set.mu.Unlock()
	return tc, nil
}

// track wraps ln so that its connections can be ended by peer address.
func (s *connSet) track(ln net.Listener) net.Listener { return trackedListener{Listener: ln, set: s} }

// closeFrom ends every tracked connection whose peer is one of addrs and
// returns how many it ended.
func (s *connSet) closeFrom(addrs ...netip.Addr) int {
	s.mu.Lock()
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
