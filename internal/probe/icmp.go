package probe

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// ICMP protocol numbers as icmp.ParseMessage wants them.
const (
	protoICMP   = 1
	protoICMPv6 = 58
)

// doICMP sends one echo request carrying the payload and waits for the
// matching reply. It tries an unprivileged ping socket first (what an agent
// gets without root), then a raw socket when running as root.
func doICMP(ctx context.Context, s wire.Step, rep *wire.Report) error {
	addr, err := netip.ParseAddr(s.Target)
	if err != nil {
		return fmt.Errorf("icmp target must be an IP address: %w", err)
	}
	addr = addr.Unmap()
	conn, raw, err := listenICMP(addr.Is4())
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}

	var idb [2]byte
	_, _ = rand.Read(idb[:])
	id, seq := int(binary.BigEndian.Uint16(idb[:])), 1
	msg := icmp.Message{Code: 0, Body: &icmp.Echo{ID: id, Seq: seq, Data: []byte(s.Payload)}}
	proto := protoICMP
	msg.Type = ipv4.ICMPTypeEcho
	if !addr.Is4() {
		proto, msg.Type = protoICMPv6, ipv6.ICMPTypeEchoRequest
	}
	wire, err := msg.Marshal(nil) // the kernel fills the ICMPv6 checksum
	if err != nil {
		return err
	}
	var dst net.Addr = &net.UDPAddr{IP: addr.AsSlice(), Zone: addr.Zone()}
	if raw {
		dst = &net.IPAddr{IP: addr.AsSlice(), Zone: addr.Zone()}
	}
	if _, err := conn.WriteTo(wire, dst); err != nil {
		return err
	}
	return awaitEcho(conn, proto, addr, id, seq, raw, rep)
}

// listenICMP returns a ping socket, or a raw one when the ping socket is
// not permitted and we are root. The error of the first try is kept: it is
// what an unprivileged agent would meet.
func listenICMP(v4 bool) (*icmp.PacketConn, bool, error) {
	dgram, rawNet, wildcard := "udp4", "ip4:icmp", "0.0.0.0"
	if !v4 {
		dgram, rawNet, wildcard = "udp6", "ip6:ipv6-icmp", "::"
	}
	c, err := icmp.ListenPacket(dgram, wildcard)
	if err == nil {
		return c, false, nil
	}
	if os.Geteuid() != 0 {
		return nil, false, &socketError{fmt.Errorf("open ping socket: %w", err)}
	}
	c, rerr := icmp.ListenPacket(rawNet, wildcard)
	if rerr != nil {
		return nil, false, &socketError{fmt.Errorf("open icmp socket: %w (ping socket: %v)", rerr, err)}
	}
	return c, true, nil
}

// awaitEcho reads until the matching echo reply, a matching destination
// unreachable, or the deadline. A raw socket sees every ICMP packet of the
// namespace, so replies are matched by peer, id and sequence.
func awaitEcho(conn *icmp.PacketConn, proto int, dst netip.Addr, id, seq int, raw bool, rep *wire.Report) error {
	buf := make([]byte, 1500)
	for {
		n, peer, err := conn.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return context.DeadlineExceeded
			}
			return err
		}
		m, err := icmp.ParseMessage(proto, buf[:n])
		if err != nil {
			continue
		}
		switch body := m.Body.(type) {
		case *icmp.Echo:
			if m.Type != ipv4.ICMPTypeEchoReply && m.Type != ipv6.ICMPTypeEchoReply {
				continue
			}
			if body.Seq != seq || (raw && (body.ID != id || !samePeer(peer, dst))) {
				continue
			}
			rep.Bytes = len(body.Data)
			rep.Excerpt = string(body.Data)
			return nil
		case *icmp.DstUnreach:
			if raw && quotesEcho(body.Data, proto, id) {
				return fmt.Errorf("icmp destination unreachable (code %d): %w", m.Code, syscall.EHOSTUNREACH)
			}
		}
	}
}

func samePeer(peer net.Addr, dst netip.Addr) bool {
	var ip net.IP
	switch p := peer.(type) {
	case *net.IPAddr:
		ip = p.IP
	case *net.UDPAddr:
		ip = p.IP
	}
	a, ok := netip.AddrFromSlice(ip)
	return ok && a.Unmap() == dst.WithZone("")
}

// quotesEcho reports whether an ICMP error quotes our echo request: the
// quoted datagram is the original IP header followed by our ICMP header.
func quotesEcho(quoted []byte, proto, id int) bool {
	off := 40 // fixed IPv6 header
	if proto == protoICMP {
		if len(quoted) < 1 {
			return false
		}
		off = int(quoted[0]&0x0f) * 4
	}
	if len(quoted) < off+8 {
		return false
	}
	return int(binary.BigEndian.Uint16(quoted[off+4:off+6])) == id
}
