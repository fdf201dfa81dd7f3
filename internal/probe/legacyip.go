package probe

import (
	"context"
	"net"
	"net/netip"

	"github.com/gatehouse-dev/gatehouse/internal/legacyip"
)

// legacyDial rewrites a legacy IPv4 host to its dotted form before dialing,
// as inet_aton-based tools do. Names and ordinary addresses pass through.
func legacyDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err == nil {
			if _, perr := netip.ParseAddr(host); perr != nil {
				if ip, ok := legacyip.Parse(host); ok {
					addr = net.JoinHostPort(ip.String(), port)
				}
			}
		}
		return dial(ctx, network, addr)
	}
}
