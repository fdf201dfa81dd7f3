package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// UnsealedError means the lab namespace may have a way out. Nothing may be
// sent into the lab while it stands.
type UnsealedError struct {
	Netns    string
	Findings []string // what was found, one line each
}

func (e *UnsealedError) Error() string {
	return fmt.Sprintf("lab: namespace %s is not sealed: %s", e.Netns, strings.Join(e.Findings, "; "))
}

// outside are addresses that must be unroutable from the lab. connect() on a
// UDP socket only looks the route up: it sends no packet.
var outside = []string{"192.0.2.1", "8.8.8.8", "1.1.1.1", "2001:4860:4860::8888", "2606:4700:4700::1111"}

// route is the part of `ip -j route show` output the seal check reads.
type route struct {
	Type     string `json:"type"`
	Dst      string `json:"dst"`
	Gateway  string `json:"gateway"`
	Via      any    `json:"via"`
	Dev      string `json:"dev"`
	Protocol string `json:"protocol"`
	Table    string `json:"table"`
	Nexthops []any  `json:"nexthops"`
	NHID     any    `json:"nhid"`
}

type iface struct {
	Name     string `json:"ifname"`
	LinkInfo struct {
		Kind string `json:"info_kind"`
	} `json:"linkinfo"`
}

// vethRE matches the lab ends of this lab's session veths.
func (l *Lab) vethRE() *regexp.Regexp {
	return regexp.MustCompile(`^gh` + l.id + `s[0-9]{1,2}l$`)
}

// Sealed returns nil only when the lab namespace has (a) no route but the
// connected routes of lo and its own session veths, (b) no interface but lo
// and those veths, and (c) a UDP connect() to outside addresses fails with
// ENETUNREACH. Anything else, including an error while checking, is reported
// as an *UnsealedError: the check fails closed.
func (l *Lab) Sealed(ctx context.Context) error {
	l.plumbing.RLock()
	defer l.plumbing.RUnlock()
	// A route over an interface that no longer exists ("dev if17": the
	// kernel is still clearing up after a removed veth) cannot carry a
	// packet; look again briefly before calling it a finding, never skip it.
	for try := 0; ; try++ {
		err := l.sealedOnce(ctx)
		var ue *UnsealedError
		if err == nil || try == 5 || !errors.As(err, &ue) || !allVanishing(ue.Findings) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

var vanishingRE = regexp.MustCompile(`\bdev if[0-9]+\b`)

func allVanishing(findings []string) bool {
	for _, f := range findings {
		if !vanishingRE.MatchString(f) {
			return false
		}
	}
	return len(findings) > 0
}

func (l *Lab) sealedOnce(ctx context.Context) error {
	var findings []string
	add := func(format string, a ...any) { findings = append(findings, fmt.Sprintf(format, a...)) }
	veth := l.vethRE()

	var links []iface
	if err := ipJSON(ctx, &links, "-d", "-n", l.name, "link", "show"); err != nil {
		add("cannot list interfaces: %v", err)
	}
	for _, i := range links {
		switch {
		case i.Name == "lo":
		case veth.MatchString(i.Name) && i.LinkInfo.Kind == "veth":
		default:
			add("interface %s (kind %q)", i.Name, i.LinkInfo.Kind)
		}
	}
	for _, fam := range []string{"-4", "-6"} {
		var routes []route
		if err := ipJSON(ctx, &routes, fam, "-n", l.name, "route", "show", "table", "all"); err != nil {
			add("cannot list %s routes: %v", fam, err)
			continue
		}
		for _, r := range routes {
			if why := badRoute(r, veth); why != "" {
				add("route %s dev %s table %s: %s", r.Dst, r.Dev, orMain(r.Table), why)
			}
		}
	}
	for _, dst := range outside {
		if err := l.connectFails(dst); err != nil {
			add("%s: %v", dst, err)
		}
	}
	if len(findings) > 0 {
		return &UnsealedError{Netns: l.name, Findings: findings}
	}
	return nil
}

// badRoute says why a route could lead out of the lab, or "" when it is a
// connected route of lo or of one of our veths (or a route that drops).
func badRoute(r route, veth *regexp.Regexp) string {
	switch r.Type {
	case "unreachable", "blackhole", "prohibit", "throw":
		return "" // these only refuse traffic
	}
	switch {
	case r.Dst == "default" || r.Dst == "0.0.0.0/0" || r.Dst == "::/0":
		return "default route"
	case r.Gateway != "" || r.Via != nil:
		return "route via a gateway"
	case len(r.Nexthops) > 0 || r.NHID != nil:
		return "route via nexthop objects"
	case r.Dev != "lo" && !veth.MatchString(r.Dev):
		return "route over a foreign interface"
	case r.Protocol != "kernel":
		return fmt.Sprintf("not a connected route (protocol %q)", r.Protocol)
	}
	return ""
}

func orMain(t string) string {
	if t == "" {
		return "main"
	}
	return t
}

// connectFails checks from inside the lab namespace that dst has no route.
func (l *Lab) connectFails(dst string) error {
	a, err := netip.ParseAddr(dst)
	if err != nil {
		return err
	}
	return InNetns(NetnsPath(l.name), func() error {
		var sa unix.Sockaddr
		family := unix.AF_INET
		if a.Is4() {
			sa = &unix.SockaddrInet4{Port: 53, Addr: a.As4()}
		} else {
			family = unix.AF_INET6
			sa = &unix.SockaddrInet6{Port: 53, Addr: a.As16()}
		}
		fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("socket: %w", err)
		}
		defer unix.Close(fd)
		err = unix.Connect(fd, sa)
		switch {
		case errors.Is(err, unix.ENETUNREACH):
			return nil
		case err == nil:
			return errors.New("routable from the lab namespace")
		default:
			return fmt.Errorf("connect: %w (want ENETUNREACH)", err)
		}
	})
}
