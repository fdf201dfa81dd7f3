package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
)

// A response to a detection revokes a session's network: Cut takes the
// lab's end of its link down, and EgressOpen checks, from inside the
// session's namespace, whether anything can still reach the lab. Neither
// touches an endpoint: the check connects to a listener opened for it
// alone on the lab's side of the session's link (an address no attempt
// names and no accounting counter counts), so it is never a hit and never
// proof of an attempt.

// ErrNotAttached is returned for a session the lab has no link for.
var ErrNotAttached = errors.New("lab: session not attached")

func (l *Lab) attachmentOf(session string) (*attachment, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := l.sessions[session]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotAttached, session)
	}
	return a, nil
}

// Cut takes the lab's end of the session's link down: from then on
// nothing the session sends reaches the lab. Detach still removes it.
func (l *Lab) Cut(ctx context.Context, session string) error {
	a, err := l.attachmentOf(session)
	if err != nil {
		return err
	}
	if err := l.linkDown(a.labVeth); err != nil {
		return err
	}
	// Its connections to the endpoints end now: nothing of the session
	// can reach them to close them, and a handler waiting on one would
	// hold the lab's shutdown.
	l.conns.closeFrom(a.v4, a.v6)
	return nil
}

// linkDown sets one of the lab's interfaces down (`ip link set DEV down`).
func (l *Lab) linkDown(dev string) error {
	l.plumbing.RLock()
	defer l.plumbing.RUnlock()
	if l.rtnl == nil {
		return fmt.Errorf("lab: cut %s: the lab is closed", dev)
	}
	lk, err := l.rtnl.LinkByName(dev)
	if err == nil {
		err = l.rtnl.LinkSetDown(lk)
	}
	if err != nil {
		return fmt.Errorf("lab: %s: set %s down: %w", l.name, dev, err)
	}
	return nil
}

// EgressOpen reports whether a TCP connection made inside the session's
// namespace reaches the lab within timeout. When it does not, why says
// what happened (timed out, refused, unreachable, namespace gone).
func (l *Lab) EgressOpen(ctx context.Context, session string, timeout time.Duration) (open bool, why string, err error) {
	a, err := l.attachmentOf(session)
	if err != nil {
		return false, "detached from the lab", nil
	}
	gw := strings.TrimSuffix(a.link.LabV4, "/30")
	var ln *net.TCPListener
	if err := InNetns(NetnsPath(l.name), func() error {
		x, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.ParseIP(gw)})
		ln = x
		return err
	}); err != nil {
		// The lab's end is gone or down: nothing reaches the lab.
		return false, "the lab's end of the link is gone: " + err.Error(), nil
	}
	defer ln.Close()
	dst := ln.Addr().String()
	accepted := make(chan bool, 1)
	go func() {
		_ = ln.SetDeadline(time.Now().Add(timeout + 100*time.Millisecond))
		for {
			c, err := ln.AcceptTCP()
			if err != nil {
				accepted <- false
				return
			}
			ra, _ := netip.ParseAddrPort(c.RemoteAddr().String())
			c.Close()
			if ra.Addr().Unmap() == a.v4 {
				accepted <- true
				return
			}
		}
	}()
	var derr error
	nerr := InNetns(NetnsPath(a.netns), func() error {
		d := net.Dialer{Timeout: timeout}
		c, err := d.DialContext(ctx, "tcp4", dst)
		if err == nil {
			c.Close()
		}
		derr = err
		return nil
	})
	if nerr != nil {
		return false, "the session's namespace is gone: " + nerr.Error(), nil
	}
	if derr != nil {
		return false, "a connection to the lab failed: " + derr.Error(), nil
	}
	if <-accepted {
		return true, "", nil
	}
	// Something in the session's namespace took the connection (a local
	// redirect): it may forward, so egress is not claimed refused.
	return true, "", nil
}
