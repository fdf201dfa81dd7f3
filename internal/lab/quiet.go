package lab

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Quiet tells, from the lab's side, whether everything a session sent that
// reached the lab has been recorded, so that a verdict need not wait a
// fixed time for stragglers. The kernel holds what is not read yet: data
// in a socket's receive queue, a connection in an accept backlog or half
// open; the lab holds what it read and has not recorded yet (a connection
// being sniffed, a request being read or served). Quiet means none of
// these, for the session's addresses (and, for what the kernel cannot
// attribute — backlogs, datagram queues — for anyone).

// busySet counts, per peer address, connections the lab has accepted and
// not yet finished recording.
type busySet struct {
	mu    sync.Mutex
	n     map[netip.Addr]int
	state map[net.Conn]bool // an HTTP connection counted as busy
}

func peerAddr(a net.Addr) netip.Addr {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

func (b *busySet) add(a net.Addr, d int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n == nil {
		b.n = map[netip.Addr]int{}
	}
	p := peerAddr(a)
	b.n[p] += d
	if b.n[p] <= 0 {
		delete(b.n, p)
	}
}

// httpState follows an HTTP server's connections: new and active ones are
// busy (a request is on its way in or being served), idle, hijacked and
// closed ones are not.
func (b *busySet) httpState(c net.Conn, st http.ConnState) {
	busy := st == http.StateNew || st == http.StateActive
	b.mu.Lock()
	was := b.state[c]
	if busy {
		if b.state == nil {
			b.state = map[net.Conn]bool{}
		}
		b.state[c] = true
	} else {
		delete(b.state, c)
	}
	b.mu.Unlock()
	switch {
	case busy && !was:
		b.add(c.RemoteAddr(), 1)
	case !busy && was:
		b.add(c.RemoteAddr(), -1)
	}
}

func (b *busySet) any(addrs ...netip.Addr) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, a := range addrs {
		if b.n[a] > 0 {
			return true
		}
	}
	return false
}

// Quiet says whether the lab has recorded everything of these sessions
// that reached it, and if not, why. Unknown sessions are ignored.
func (l *Lab) Quiet(ctx context.Context, sessions ...string) (bool, string, error) {
	var addrs []netip.Addr
	l.mu.Lock()
	for _, s := range sessions {
		if a, ok := l.sessions[s]; ok {
			addrs = append(addrs, a.v4, a.v6)
		}
	}
	l.mu.Unlock()
	if l.busy.any(addrs...) {
		return false, "a connection is being recorded", nil
	}
	mine := func(a netip.Addr) bool {
		for _, x := range addrs {
			if a == x {
				return true
			}
		}
		return false
	}
	why := ""
	err := InNetns(NetnsPath(l.name), func() error {
		for _, t := range []string{"tcp", "tcp6", "udp", "udp6", "raw", "raw6", "icmp", "icmp6"} {
			b, err := os.ReadFile("/proc/thread-self/net/" + t)
			if err != nil {
				if os.IsNotExist(err) {
					continue
				}
				return err
			}
			w, err := pending(b, strings.HasPrefix(t, "tcp"), mine)
			if err != nil {
				return fmt.Errorf("%s: %w", t, err)
			}
			if w != "" {
				why = t + ": " + w
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return false, "", fmt.Errorf("lab: quiet: %w", err)
	}
	return why == "", why, nil
}

// pending reads a /proc/net socket table and says what in it is not read
// yet ("" for nothing): a receive queue with data (for TCP, only of a
// connection from one of the sessions), an accept backlog, a half-open
// connection from one of the sessions.
func pending(table []byte, tcp bool, mine func(netip.Addr) bool) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(table))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		_, rxs, ok := strings.Cut(f[4], ":")
		if !ok {
			return "", fmt.Errorf("queue field %q", f[4])
		}
		rx, err := strconv.ParseUint(rxs, 16, 64)
		if err != nil {
			return "", fmt.Errorf("queue field %q", f[4])
		}
		if !tcp {
			if rx > 0 {
				return fmt.Sprintf("%d bytes waiting on %s", rx, f[1]), nil
			}
			continue
		}
		switch f[3] {
		case "0A": // LISTEN: rx is the accept backlog
			if rx > 0 {
				return fmt.Sprintf("%d connection(s) waiting to be accepted on %s", rx, f[1]), nil
			}
			continue
		}
		peer, _, err := procAddr(f[2])
		if err != nil {
			return "", err
		}
		if !mine(peer) {
			continue
		}
		if f[3] == "03" { // SYN_RECV
			return "a connection from " + peer.String() + " is half open", nil
		}
		if rx > 0 {
			return fmt.Sprintf("%d bytes from %s not read yet", rx, peer), nil
		}
	}
	return "", sc.Err()
}
