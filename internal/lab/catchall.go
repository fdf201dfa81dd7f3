package lab

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/hostenv"
)

// An egress rule that allows a port to any address ("tcp dport 22 accept"
// for git, "udp dport 443" for QUIC) would pass unobserved if only the
// callback's few service ports listened. So every other TCP and UDP port of
// every callback address is sent, by an nftables TPROXY rule in the lab
// namespace, to one recorder socket per address and protocol. TPROXY does
// not rewrite the packet: an accepted TCP connection's local address, and a
// datagram's IP_ORIGDSTADDR, are the address and port the sandbox really
// aimed at. The callback addresses are local (on lo), so no policy routing
// is needed, and nothing here adds a route.
const catchAllTable = "gatehouse_catchall"

// servicePorts are the callback ports that have listeners of their own.
var servicePorts = map[string]string{
	"tcp": fmt.Sprintf("%d, %d, %d", CallbackHTTPPort, CallbackHTTPSPort, CallbackTCPPort),
	"udp": fmt.Sprint(CallbackUDPPort),
}

func catchAllRuleset(a Addrs) string {
	var b strings.Builder
	fmt.Fprintf(&b, "table inet %s {\n\tchain pre {\n", catchAllTable)
	b.WriteString("\t\ttype filter hook prerouting priority mangle; policy accept;\n")
	for _, host := range a.Callback {
		fam, to := "ip", host
		if strings.Contains(host, ":") {
			fam, to = "ip6", "["+host+"]"
		}
		for _, proto := range []string{"tcp", "udp"} {
			fmt.Fprintf(&b, "\t\t%s daddr %s %s dport != { %s } tproxy %s to %s:%d\n",
				fam, host, proto, servicePorts[proto], fam, to, CatchAllPort)
		}
	}
	// The allowed destination's address: every port but its own services.
	// A contact there is the allowed host on a port the policy may not
	// have meant.
	fmt.Fprintf(&b, "\t\tip daddr %s tcp dport != { %d, %d } tproxy ip to %s:%d\n",
		InferenceV4, 80, 443, InferenceV4, CatchAllPort)
	fmt.Fprintf(&b, "\t\tip daddr %s udp dport 1-65535 tproxy ip to %s:%d\n", InferenceV4, InferenceV4, CatchAllPort)
	b.WriteString("\t}\n}\n")
	return b.String()
}

// catchEndpoint names the endpoint a catch-all contact arrived at: the
// allowed destination's address, or the callback's.
func catchEndpoint(dst net.Addr) string {
	if ap, err := netip.ParseAddrPort(dst.String()); err == nil && ap.Addr().Unmap().String() == InferenceV4 {
		return "inference"
	}
	return "callback"
}

// addCatchAll loads the TPROXY rules into the lab namespace. It runs after
// the recorder sockets exist, so no packet is sent to a port with no one
// behind it.
func (l *Lab) addCatchAll(ctx context.Context) error {
	cmd := hostenv.Command(ctx, "nsenter", "--net="+NetnsPath(l.name), "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(catchAllRuleset(l.addrs))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("catch-all rules (the kernel needs nft_tproxy): %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// transparent lets a socket accept what TPROXY hands it, and a UDP socket
// learn each datagram's original destination.
func transparent(network, _ string, rc syscall.RawConn) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		level, opt, orig := unix.SOL_IP, unix.IP_TRANSPARENT, unix.IP_RECVORIGDSTADDR
		if strings.HasSuffix(network, "6") {
			level, opt, orig = unix.SOL_IPV6, unix.IPV6_TRANSPARENT, unix.IPV6_RECVORIGDSTADDR
		}
		if serr = unix.SetsockoptInt(int(fd), level, opt, 1); serr != nil {
			return
		}
		if strings.HasPrefix(network, "udp") {
			serr = unix.SetsockoptInt(int(fd), level, orig, 1)
		}
	})
	if err != nil {
		return err
	}
	return serr
}

// serveCatchAll starts the TCP and UDP recorders of one callback address
// (or of the inference address).
func (l *Lab) serveCatchAll(ctx context.Context, host string) error {
	addr := hostPort(host, CatchAllPort)
	fam, err := family(addr)
	if err != nil {
		return err
	}
	lc := net.ListenConfig{Control: transparent}
	var ln net.Listener
	var pc net.PacketConn
	err = InNetns(NetnsPath(l.name), func() (err error) {
		if ln, err = lc.Listen(ctx, "tcp"+fam, addr); err != nil {
			return err
		}
		if pc, err = lc.ListenPacket(ctx, "udp"+fam, addr); err != nil {
			ln.Close()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("catch-all %s: %w", addr, err)
	}
	stop := serveConns(l.conns.track(ln), l.catchConn)
	l.stops = append(l.stops, func(context.Context) error { return stop() })
	l.serveCatchUDP(pc.(*net.UDPConn))
	return nil
}

// catchConn records one connection to any port: what it sent first (TLS
// server name included) and the port it was sent to. It answers an HTTP
// request with a minimal 200, anything else with "ok".
func (l *Lab) catchConn(c net.Conn) {
	first := sniff(c)
	summary, data := firstBytes(first)
	h := evidence.Hit{Endpoint: catchEndpoint(c.LocalAddr()), Proto: "tcp", Src: c.RemoteAddr().String(),
		Dst: c.LocalAddr().String(), Data: data}
	h.Summary = fmt.Sprintf("tcp port %d: %s", port(c.LocalAddr()), summary)
	l.record(h, h.Src)
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	switch {
	case looksHTTP(first):
		_, _ = c.Write([]byte("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n"))
	case len(first) > 0 && first[0] == 0x16:
		// A TLS client: we hold no certificate here; the hit is the point.
	default:
		_, _ = c.Write([]byte("ok\n"))
	}
}

func port(a net.Addr) int {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.Port
	}
	return 0
}
