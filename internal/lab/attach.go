package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"regexp"

	"github.com/gatehouse-dev/gatehouse/internal/namedns"
	"github.com/vishvananda/netlink"
)

var sessionRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// Network is what Attach made for a session: its network namespace, joined
// to the lab, and the addresses it has there. It has the fields of
// targets.Network, which the suite converts it to (the lab knows nothing of
// targets; a field added to one and not the other stops that conversion
// compiling).
type Network struct {
	NetnsName string // e.g. "gh-1a2b-s3"
	NetnsPath string // e.g. "/run/netns/gh-1a2b-s3"
	IPv4      string // the session's own address, e.g. "198.51.100.6"
	IPv6      string // e.g. "2001:db8:100:3::2"
	Resolver  string // the resolver the sandbox is given, e.g. "203.0.113.53"
}

// attachment is one session namespace joined to the lab.
type attachment struct {
	n        int
	netns    string
	labVeth  string // in the lab namespace
	peerVeth string // in the session namespace
	link     link
	v4, v6   netip.Addr
	created  bool   // the session namespace is ours to delete
	release  func() // drops its ledger entry
}

// Attach creates the session's network namespace, joins it to the lab with a
// veth pair and routes everything it sends into the lab. It refuses with an
// *UnsealedError when the lab is not sealed, before creating anything.
func (l *Lab) Attach(ctx context.Context, session string) (Network, error) {
	if !sessionRE.MatchString(session) {
		return Network{}, fmt.Errorf("lab: attach session: name %q is not [a-z0-9-]{1,32}", session)
	}
	if err := l.Sealed(ctx); err != nil {
		return Network{}, fmt.Errorf("lab: attach session %s: %w", session, err)
	}
	a, err := l.reserve(session)
	if err != nil {
		return Network{}, fmt.Errorf("lab: attach session %s: %w", session, err)
	}
	l.plumbing.Lock()
	err = l.plumb(ctx, a)
	l.plumbing.Unlock()
	if err != nil {
		if derr := l.Detach(context.WithoutCancel(ctx), session); derr != nil {
			err = errors.Join(err, derr)
		}
		return Network{}, fmt.Errorf("lab: attach session %s: %w", session, err)
	}
	l.logf("lab %s: session %s attached as %s (%s, %s)", l.name, session, a.netns, a.v4, a.v6)
	return Network{
		NetnsName: a.netns,
		NetnsPath: NetnsPath(a.netns),
		IPv4:      a.v4.String(),
		IPv6:      a.v6.String(),
		Resolver:  ResolverV4,
	}, nil
}

// reserve takes the next free session index, round robin, and records the
// addresses so that hits can be attributed as soon as the link is up. An
// address is reused only after every other one was: a packet still queued
// from a detached session must not be pinned on the next one.
func (l *Lab) reserve(session string) (*attachment, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.sessions[session]; ok {
		return nil, errors.New("already attached")
	}
	used := map[int]bool{}
	for _, a := range l.sessions {
		used[a.n] = true
	}
	n := 0
	for i := 0; i < maxSessions; i++ {
		c := (l.next+i)%maxSessions + 1
		if !used[c] {
			n = c
			break
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("all %d session links are in use", maxSessions)
	}
	l.next = n % maxSessions
	lk, err := linkFor(n)
	if err != nil {
		return nil, err
	}
	a := &attachment{
		n:        n,
		netns:    l.name + "-" + session,
		labVeth:  fmt.Sprintf("gh%ss%dl", l.id, n),
		peerVeth: fmt.Sprintf("gh%ss%dp", l.id, n),
		link:     lk,
		v4:       netip.MustParsePrefix(lk.SessionV4).Addr(),
		v6:       netip.MustParsePrefix(lk.SessionV6).Addr(),
	}
	l.sessions[session] = a
	l.bySrc[a.v4] = session
	l.bySrc[a.v6] = session
	return a, nil
}

func (l *Lab) plumb(ctx context.Context, a *attachment) error {
	s := a.netns
	// Fails when the name exists: not ours, leave it alone. Its lo is up.
	release, err := namedns.AddRecorded(s)
	if err != nil {
		return err
	}
	l.mu.Lock()
	a.created, a.release = true, release
	l.mu.Unlock()
	sh, err := rtnlAt(NetnsPath(s))
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", s, err)
	}
	defer sh.Close()
	sf, err := namedns.Open(s)
	if err != nil {
		return err
	}
	defer sf.Close()
	if err := ctx.Err(); err != nil {
		return err
	}
	// Created inside the lab namespace with its peer moved straight into
	// the session namespace: no end ever exists in the host namespace.
	veth := &netlink.Veth{LinkAttrs: netlink.NewLinkAttrs(), PeerName: a.peerVeth, PeerTxQLen: -1, PeerNamespace: netlink.NsFd(sf.Fd())}
	veth.Name = a.labVeth
	if err := l.rtnl.LinkAdd(veth); err != nil {
		return fmt.Errorf("%s: add veth %s (peer %s in %s): %w", l.name, a.labVeth, a.peerVeth, s, err)
	}
	if err := addAddrs(l.rtnl, l.name, a.labVeth, a.link.LabV4, a.link.LabV6); err != nil {
		return err
	}
	if err := linkUp(l.rtnl, l.name, a.labVeth); err != nil {
		return err
	}
	if err := addAddrs(sh, s, a.peerVeth, a.link.SessionV4, a.link.SessionV6); err != nil {
		return err
	}
	if err := linkUp(sh, s, a.peerVeth); err != nil {
		return err
	}
	for _, gw := range []string{a.link.LabV4, a.link.LabV6} {
		if err := addDefaultRoute(sh, s, netip.MustParsePrefix(gw).Addr()); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := addAccounting(NetnsPath(s), l.addrs.acctDests()); err != nil {
		return err
	}
	// As on a typical host, where unprivileged users may send ICMP echo
	// through datagram sockets: an unprivileged sandbox must be able to try
	// ping, or the ICMP callback attempt would be blocked by our namespace
	// rather than by the sandbox under test.
	return setSysctl(NetnsPath(s), "net.ipv4.ping_group_range", "0 2147483647")
}

// Detach removes the session's namespace (which destroys its veth pair).
// Detaching an unknown session is not an error.
func (l *Lab) Detach(ctx context.Context, session string) error {
	if err := l.detach(ctx, session); err != nil {
		return fmt.Errorf("lab: detach session %s: %w", session, err)
	}
	return nil
}

func (l *Lab) detach(ctx context.Context, session string) error {
	l.mu.Lock()
	a, ok := l.sessions[session]
	l.mu.Unlock()
	if !ok {
		return nil
	}
	// Delete the lab end first: that removes the pair at once, whereas a
	// deleted namespace is torn down asynchronously by the kernel.
	var err error
	l.plumbing.Lock()
	defer l.plumbing.Unlock()
	if l.rtnl != nil {
		err = delLink(l.rtnl, l.name, a.labVeth)
	}
	l.mu.Lock()
	created, release := a.created, a.release
	l.mu.Unlock()
	if created {
		derr := deleteNetns(a.netns)
		if derr == nil && release != nil {
			release()
		}
		err = errors.Join(err, derr)
	}
	if err != nil {
		return err
	}
	l.mu.Lock()
	delete(l.sessions, session)
	// bySrc keeps the session's addresses until reserve gives them to
	// another: a packet that reaches the lab late (a sniff that took its
	// time on a loaded machine) is still this session's, not the only
	// other one alive (issue 22). Nothing new can come from them: the
	// link is gone.
	l.mu.Unlock()
	l.conns.forget(a.v4, a.v6)
	return nil
}

// deleteNetns removes a named namespace if it exists (as `ip netns del`).
func deleteNetns(name string) error { return namedns.Delete(name) }
