package probe

import (
	"context"
	"net"
)

// GuardHTTPDial makes HTTP attempts refuse any address that is not a
// loopback IP literal, before resolving it; it returns the restore func.
func GuardHTTPDial() (restore func()) {
	orig := httpDial
	httpDial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return nil, &net.AddrError{Err: "test guard: not loopback", Addr: addr}
		}
		return orig(ctx, network, addr)
	}
	return func() { httpDial = orig }
}
