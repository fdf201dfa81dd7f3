package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// serveICMP records echo requests to every callback address. The kernel
// answers the echo itself; a raw socket bound to the address gets a copy of
// each ICMP packet sent to it, which is all we need to see the attempt.
func (l *Lab) serveICMP(ctx context.Context) error {
	type listener struct {
		network, addr, proto string
		ianaProto            int
		echo                 icmp.Type
	}
	var ls []listener
	for _, a := range l.addrs.Callback {
		if strings.Contains(a, ":") {
			ls = append(ls, listener{"ip6:ipv6-icmp", a, "icmp6", 58, ipv6.ICMPTypeEchoRequest})
		} else {
			ls = append(ls, listener{"ip4:icmp", a, "icmp", 1, ipv4.ICMPTypeEcho})
		}
	}
	for _, c := range ls {
		var pc *icmp.PacketConn
		err := InNetns(NetnsPath(l.name), func() (err error) {
			pc, err = icmp.ListenPacket(c.network, c.addr)
			return err
		})
		if err != nil {
			return fmt.Errorf("icmp %s: %w", c.addr, err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			buf := make([]byte, 64<<10)
			for {
				n, from, err := pc.ReadFrom(buf)
				if errors.Is(err, net.ErrClosed) {
					return
				}
				if err != nil {
					continue
				}
				m, err := icmp.ParseMessage(c.ianaProto, buf[:n])
				if err != nil || m.Type != c.echo {
					continue
				}
				h := evidence.Hit{Endpoint: "callback", Proto: c.proto, Src: from.String(), Dst: c.addr}
				if e, ok := m.Body.(*icmp.Echo); ok {
					h.Data = printable(e.Data[:min(len(e.Data), maxData)])
					h.Summary = fmt.Sprintf("echo id=%d seq=%d %d bytes: %s", e.ID, e.Seq, len(e.Data), h.Data)
				} else {
					h.Summary = "echo request"
				}
				l.record(h, h.Src)
			}
		}()
		l.stops = append(l.stops, func(context.Context) error {
			err := pc.Close()
			<-done
			return err
		})
	}
	return nil
}
