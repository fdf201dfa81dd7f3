package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
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

// route is a route as the seal check reads it: the fields of `ip -j route
// show` (routeOf fills it from netlink).
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

	links, routes, err := l.inspect()
	if err != nil {
		add("cannot list interfaces and routes: %v", err)
	}
	for _, i := range links {
		switch {
		case i.Name == "lo":
		case veth.MatchString(i.Name) && i.LinkInfo.Kind == "veth":
		default:
			add("interface %s (kind %q)", i.Name, i.LinkInfo.Kind)
		}
	}
	for _, r := range routes {
		if why := badRoute(r, veth); why != "" {
			add("route %s dev %s table %s: %s", r.Dst, r.Dev, orMain(r.Table), why)
		}
	}
	for _, err := range l.connectFails(outside) {
		add("%v", err)
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

// connectFails checks from inside the lab namespace, on one thread visit,
// that none of dsts has a route; it returns one error per failed check.
func (l *Lab) connectFails(dsts []string) []error {
	var errs []error
	err := InNetns(NetnsPath(l.name), func() error {
		for _, dst := range dsts {
			if err := unroutable(dst); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", dst, err))
			}
		}
		return nil
	})
	if err != nil {
		return []error{fmt.Errorf("cannot enter %s: %w", l.name, err)}
	}
	return errs
}

// unroutable checks that a UDP connect() to dst, from the calling thread's
// namespace, fails with ENETUNREACH.
func unroutable(dst string) error {
	a, err := netip.ParseAddr(dst)
	if err != nil {
		return err
	}
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
}

// inspect reads the lab namespace's interfaces and its routes of every
// table, both families, through the lab's netlink socket, in the terms of
// `ip -d link show` and `ip route show table all` that the checks use.
func (l *Lab) inspect() ([]iface, []route, error) {
	if l.rtnl == nil {
		return nil, nil, errors.New("no netlink socket in the lab namespace")
	}
	var links []netlink.Link
	var raw []netlink.Route
	// A dump interrupted by a concurrent change is read again, never used.
	var err error
	for try := 0; try < 3; try++ {
		if links, err = l.rtnl.LinkList(); err != nil {
			continue
		}
		raw = raw[:0]
		for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
			var rs []netlink.Route
			rs, err = l.rtnl.RouteListFiltered(fam, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
			if err != nil {
				break
			}
			raw = append(raw, rs...)
		}
		if err == nil {
			break
		}
	}
	if err != nil {
		return nil, nil, err
	}
	names := map[int]string{}
	ifaces := make([]iface, 0, len(links))
	for _, lk := range links {
		names[lk.Attrs().Index] = lk.Attrs().Name
		var i iface
		i.Name = lk.Attrs().Name
		if kind := lk.Type(); kind != "device" { // "device": no link kind (lo)
			i.LinkInfo.Kind = kind
		}
		ifaces = append(ifaces, i)
	}
	routes := make([]route, 0, len(raw))
	for _, r := range raw {
		routes = append(routes, routeOf(r, names))
	}
	return ifaces, routes, nil
}

// routeTypes names the route types as iproute2 prints them.
var routeTypes = map[int]string{
	unix.RTN_UNICAST: "unicast", unix.RTN_LOCAL: "local", unix.RTN_BROADCAST: "broadcast",
	unix.RTN_ANYCAST: "anycast", unix.RTN_MULTICAST: "multicast", unix.RTN_BLACKHOLE: "blackhole",
	unix.RTN_UNREACHABLE: "unreachable", unix.RTN_PROHIBIT: "prohibit", unix.RTN_THROW: "throw",
	unix.RTN_NAT: "nat", unix.RTN_XRESOLVE: "xresolve",
}

// routeOf describes a netlink route as `ip -j route show` would. An
// interface index with no interface reads "ifN", as iproute2 prints it
// (Sealed looks again at routes over vanishing interfaces). A route
// whose nexthop is an object and carries no interface reads with no
// device: a foreign interface, so the check still fails closed.
func routeOf(r netlink.Route, names map[int]string) route {
	out := route{Type: routeTypes[r.Type], Protocol: r.Protocol.String()}
	if out.Type == "" {
		out.Type = strconv.Itoa(r.Type)
	}
	if ones, _ := maskOf(r.Dst); r.Dst == nil || ones == 0 {
		out.Dst = "default"
	} else if bits := len(r.Dst.IP) * 8; ones == bits || (r.Dst.IP.To4() != nil && ones == 32) {
		out.Dst = r.Dst.IP.String()
	} else {
		out.Dst = r.Dst.String()
	}
	if r.Gw != nil {
		out.Gateway = r.Gw.String()
	}
	if r.Via != nil {
		out.Via = r.Via.String()
	}
	if r.LinkIndex != 0 {
		if n, ok := names[r.LinkIndex]; ok {
			out.Dev = n
		} else {
			out.Dev = "if" + strconv.Itoa(r.LinkIndex)
		}
	}
	switch r.Table {
	case unix.RT_TABLE_MAIN:
	case unix.RT_TABLE_LOCAL:
		out.Table = "local"
	case unix.RT_TABLE_DEFAULT:
		out.Table = "default"
	default:
		out.Table = strconv.Itoa(r.Table)
	}
	for _, nh := range r.MultiPath {
		out.Nexthops = append(out.Nexthops, nh)
	}
	return out
}

func maskOf(n *net.IPNet) (int, int) {
	if n == nil {
		return 0, 0
	}
	return n.Mask.Size()
}
