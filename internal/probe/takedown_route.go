package probe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// TakedownAddress is the address the addresses step adds, on loopback:
// RFC 2544 benchmarking space, which no lab endpoint and no real service
// uses, so adding it proves the power to change addresses and changes
// nothing else.
const TakedownAddress = "198.18.0.254"

// nlLink is one interface as RTM_GETLINK lists it.
type nlLink struct {
	Index int32
	Name  string
	Flags uint32
}

func (k nlLink) up() bool       { return k.Flags&unix.IFF_UP != 0 }
func (k nlLink) loopback() bool { return k.Flags&unix.IFF_LOOPBACK != 0 }

// ifinfo is an ifinfomsg: family, type, index, flags, change.
func ifinfo(index int32, flags, change uint32) []byte {
	b := make([]byte, unix.SizeofIfInfomsg)
	binary.NativeEndian.PutUint32(b[4:], uint32(index))
	binary.NativeEndian.PutUint32(b[8:], flags)
	binary.NativeEndian.PutUint32(b[12:], change)
	return b
}

func listLinks(c *nlConn) ([]nlLink, error) {
	msgs, err := c.dump(unix.RTM_GETLINK, ifinfo(0, 0, 0))
	if err != nil {
		return nil, err
	}
	var out []nlLink
	for _, m := range msgs {
		if m.Header.Type != unix.RTM_NEWLINK || len(m.Data) < unix.SizeofIfInfomsg {
			continue
		}
		out = append(out, nlLink{
			Index: int32(binary.NativeEndian.Uint32(m.Data[4:])),
			Flags: binary.NativeEndian.Uint32(m.Data[8:]),
			Name:  cString(nlAttrs(m.Data[unix.SizeofIfInfomsg:])[unix.IFLA_IFNAME]),
		})
	}
	return out, nil
}

// routeConn opens a route socket in the probe's own namespace and lists
// its links, or logs why not.
func routeConn(s wire.Step, l *tdLog) (*nlConn, []nlLink, error) {
	if err := ownNamespace("net", s.Outside); err != nil {
		l.add(wire.TakedownSkipped, "%v", err)
		return nil, nil, err
	}
	c, err := dialNetlink(unix.NETLINK_ROUTE)
	if err != nil {
		l.result("open a route netlink socket", err)
		return nil, nil, nil
	}
	links, err := listLinks(c)
	if err != nil {
		c.Close()
		l.result("list interfaces", err)
		return nil, nil, nil
	}
	return c, links, nil
}

// takeDownLinks brings up every interface that is down.
func takeDownLinks(s wire.Step, l *tdLog) error {
	c, links, err := routeConn(s, l)
	if c == nil {
		return err
	}
	defer c.Close()
	var up []string
	for _, k := range links {
		if k.up() {
			up = append(up, k.Name)
			continue
		}
		req := &nlMsg{Type: unix.RTM_NEWLINK, Flags: unix.NLM_F_REQUEST | unix.NLM_F_ACK, Body: ifinfo(k.Index, unix.IFF_UP, unix.IFF_UP)}
		l.result("bring interface "+k.Name+" up", c.exec(req, req))
	}
	if len(up) > 0 {
		l.add(wire.TakedownUnchanged, "already up: %s", strings.Join(up, " "))
	}
	return nil
}

// takeDownRoutes adds a default route, for each address family that has
// none, through the first interface that is up and not loopback. Packets
// it sends still end in the namespace the sandbox is joined to.
func takeDownRoutes(s wire.Step, l *tdLog) error {
	c, links, err := routeConn(s, l)
	if c == nil {
		return err
	}
	defer c.Close()
	var via *nlLink
	for i := range links {
		if links[i].up() && !links[i].loopback() {
			via = &links[i]
			break
		}
	}
	for _, fam := range []struct {
		af   uint8
		name string
	}{{unix.AF_INET, "IPv4"}, {unix.AF_INET6, "IPv6"}} {
		has, err := hasDefaultRoute(c, fam.af)
		switch {
		case err != nil:
			l.result("list "+fam.name+" routes", err)
		case has:
			l.add(wire.TakedownUnchanged, "%s default route already there", fam.name)
		case via == nil:
			l.add(wire.TakedownUnchanged, "no %s default route, and no interface but loopback to add one through", fam.name)
		default:
			l.result(fmt.Sprintf("add %s default route dev %s", fam.name, via.Name), addDefaultRoute(c, fam.af, via.Index))
		}
	}
	return nil
}

// rtmsg is an rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags.
func rtmsg(af, table, proto, scope, typ uint8) []byte {
	return []byte{af, 0, 0, 0, table, proto, scope, typ, 0, 0, 0, 0}
}

func hasDefaultRoute(c *nlConn, af uint8) (bool, error) {
	msgs, err := c.dump(unix.RTM_GETROUTE, rtmsg(af, 0, 0, 0, 0))
	if err != nil {
		return false, err
	}
	for _, m := range msgs {
		if m.Header.Type != unix.RTM_NEWROUTE || len(m.Data) < unix.SizeofRtMsg {
			continue
		}
		table := uint32(m.Data[4])
		if t, ok := nlAttrs(m.Data[unix.SizeofRtMsg:])[unix.RTA_TABLE]; ok && len(t) == 4 {
			table = binary.NativeEndian.Uint32(t)
		}
		if m.Data[1] == 0 && table == unix.RT_TABLE_MAIN && m.Data[7] == unix.RTN_UNICAST {
			return true, nil
		}
	}
	return false, nil
}

func addDefaultRoute(c *nlConn, af uint8, index int32) error {
	scope := uint8(unix.RT_SCOPE_LINK)
	if af == unix.AF_INET6 {
		scope = unix.RT_SCOPE_UNIVERSE
	}
	oif := make([]byte, 4)
	binary.NativeEndian.PutUint32(oif, uint32(index))
	body := nlAttr(rtmsg(af, unix.RT_TABLE_MAIN, unix.RTPROT_BOOT, scope, unix.RTN_UNICAST), unix.RTA_OIF, oif)
	req := &nlMsg{Type: unix.RTM_NEWROUTE, Flags: unix.NLM_F_REQUEST | unix.NLM_F_ACK | unix.NLM_F_CREATE | unix.NLM_F_EXCL, Body: body}
	return c.exec(req, req)
}

// takeDownAddresses adds TakedownAddress to loopback.
func takeDownAddresses(s wire.Step, l *tdLog) error {
	c, links, err := routeConn(s, l)
	if c == nil {
		return err
	}
	defer c.Close()
	var lo *nlLink
	for i := range links {
		if links[i].loopback() {
			lo = &links[i]
		}
	}
	if lo == nil {
		l.add(wire.TakedownUnchanged, "no loopback interface to add an address to")
		return nil
	}
	addr := netip.MustParseAddr(TakedownAddress).As4()
	body := []byte{unix.AF_INET, 32, 0, unix.RT_SCOPE_HOST, 0, 0, 0, 0}
	binary.NativeEndian.PutUint32(body[4:], uint32(lo.Index))
	body = nlAttr(nlAttr(body, unix.IFA_LOCAL, addr[:]), unix.IFA_ADDRESS, addr[:])
	req := &nlMsg{Type: unix.RTM_NEWADDR, Flags: unix.NLM_F_REQUEST | unix.NLM_F_ACK | unix.NLM_F_CREATE | unix.NLM_F_EXCL, Body: body}
	what := "add address " + TakedownAddress + "/32 on " + lo.Name
	if err := c.exec(req, req); errors.Is(err, syscall.EEXIST) {
		l.add(wire.TakedownUnchanged, "%s: already there", what)
	} else {
		l.result(what, err)
	}
	return nil
}
