package lab

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// serveCatchUDP records every datagram TPROXY hands the socket, with the
// address and port it was sent to. It does not answer: a reply would have
// to come from that port, and the datagram's arrival is the proof.
func (l *Lab) serveCatchUDP(pc *net.UDPConn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64<<10)
		oob := make([]byte, 256)
		for {
			n, oobn, _, from, err := pc.ReadMsgUDPAddrPort(buf, oob)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue
			}
			dst, ok := origDst(oob[:oobn])
			if !ok {
				dst = netip.MustParseAddrPort(pc.LocalAddr().String())
			}
			b := buf[:n]
			h := evidence.Hit{Endpoint: catchEndpoint(net.UDPAddrFromAddrPort(dst)), Proto: "udp", Src: from.String(),
				Dst: dst.String(), Data: printable(b[:min(n, maxData)])}
			h.Summary = fmt.Sprintf("udp port %d, %d bytes: %s", dst.Port(), n, datagram(b))
			l.record(h, h.Src)
		}
	}()
	l.stops = append(l.stops, func(context.Context) error {
		err := pc.Close()
		<-done
		return err
	})
}

// origDst reads IP_ORIGDSTADDR / IPV6_ORIGDSTADDR from a datagram's control
// messages: a sockaddr_in or sockaddr_in6 (port in network byte order).
func origDst(oob []byte) (netip.AddrPort, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return netip.AddrPort{}, false
	}
	for _, m := range msgs {
		d := m.Data
		switch {
		case m.Header.Level == unix.SOL_IP && m.Header.Type == unix.IP_ORIGDSTADDR && len(d) >= 8:
			return netip.AddrPortFrom(netip.AddrFrom4([4]byte(d[4:8])), binary.BigEndian.Uint16(d[2:4])), true
		case m.Header.Level == unix.SOL_IPV6 && m.Header.Type == unix.IPV6_ORIGDSTADDR && len(d) >= 24:
			return netip.AddrPortFrom(netip.AddrFrom16([16]byte(d[8:24])), binary.BigEndian.Uint16(d[2:4])), true
		}
	}
	return netip.AddrPort{}, false
}

// datagram says what a datagram looks like, for the hit's summary: a QUIC
// long-header packet, a DNS query, or its first bytes.
func datagram(b []byte) string {
	if len(b) >= 5 && b[0]&0xc0 == 0xc0 {
		types := []string{"Initial", "0-RTT", "Handshake", "Retry"}
		return fmt.Sprintf("QUIC %s (version 0x%08x)", types[(b[0]>>4)&3], binary.BigEndian.Uint32(b[1:5]))
	}
	var m dns.Msg
	if err := m.Unpack(b); err == nil && len(m.Question) > 0 {
		q := m.Question[0]
		return fmt.Sprintf("DNS %s %s", dns.TypeToString[q.Qtype], q.Name)
	}
	return printable(b[:min(len(b), 64)])
}
