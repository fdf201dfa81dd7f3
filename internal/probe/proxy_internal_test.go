package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

func TestFindProxyReadsAnyCaseAndIgnoresNoProxy(t *testing.T) {
	for _, k := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "FTP_PROXY", "ftp_proxy", "NO_PROXY", "no_proxy"} {
		t.Setenv(k, "")
	}
	t.Setenv("NO_PROXY", "*")
	t.Setenv("https_proxy", "http://run:tok@127.0.0.1:3128")
	t.Setenv("All_Proxy", "socks5h://run:tok@127.0.0.1:1080")
	u, err := findProxy(wire.ViaConnect)
	if err != nil || u.Host != "127.0.0.1:3128" {
		t.Fatalf("connect: %v %v", u, err)
	}
	if got := basicAuth(u); got != "Basic cnVuOnRvaw==" {
		t.Errorf("auth = %q", got)
	}
	if u, err := findProxy(wire.ViaSOCKS5); err != nil || u.Host != "127.0.0.1:1080" {
		t.Fatalf("socks5: %v %v", u, err)
	}
	// An http-only environment has no SOCKS proxy: said plainly.
	t.Setenv("All_Proxy", "")
	if _, err := findProxy(wire.ViaSOCKS5); !errors.Is(err, errNoProxy) {
		t.Fatalf("socks5 without one: %v", err)
	}
	// srt names its SOCKS bridge in FTP_PROXY: found there too.
	t.Setenv("FTP_PROXY", "socks5h://run:tok@localhost:1080")
	if u, err := findProxy(wire.ViaSOCKS5); err != nil || u.Host != "localhost:1080" {
		t.Fatalf("socks5 from FTP_PROXY: %v %v", u, err)
	}
	t.Setenv("FTP_PROXY", "")
	rep := wire.Report{}
	err = doProxy(context.Background(), wire.Step{Kind: wire.KindProxy, Via: wire.ViaSOCKS5, Target: "x:80"}, &rep)
	if classify(err) != wire.OutcomeNoProxy {
		t.Errorf("outcome %s (%v), want no-proxy", classify(err), err)
	}
}

// TestSocketRefusedIsUnreachable: a socket the kernel would not create
// (EACCES/EPERM at socket time) left nothing; an EPERM on send is the
// firewall's denial of a packet that did leave the socket layer.
func TestSocketRefusedIsUnreachable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&socketError{fmt.Errorf("open ping socket: %w", syscall.EACCES)}, wire.OutcomeUnreachable},
		{&socketError{fmt.Errorf("open icmp socket: %w", syscall.EPERM)}, wire.OutcomeUnreachable},
		{fmt.Errorf("write: %w", syscall.EPERM), wire.OutcomeDenied},
		// A proxy that refused a large body before reading it all.
		{&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}, wire.OutcomeRefused},
		{&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, wire.OutcomeRefused},
		// As net.Dial reports a socket a seccomp filter refused (Codex,
		// network off), and as the resolver does.
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", syscall.EPERM)}, wire.OutcomeUnreachable},
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EPERM)}, wire.OutcomeDenied},
		{&net.DNSError{Err: "dial udp 203.0.113.53:53: socket: operation not permitted"}, wire.OutcomeUnreachable},
		{&net.DNSError{Err: "write udp 203.0.113.53:53: operation not permitted"}, wire.OutcomeDenied},
	} {
		if got := classify(tc.err); got != tc.want {
			t.Errorf("classify(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}
