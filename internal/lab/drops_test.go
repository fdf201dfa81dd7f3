package lab_test

import (
	"context"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/lab"
)

// What the kernel drops at a socket in the lab's namespace is counted
// from Up to Close, and a lab that only served its sessions drops nothing:
// a drop on a loaded machine may hide a query or a connection a gate looks
// for (issue 22), so the run makes every PASS INCONCLUSIVE on it.
func TestKernelDropsAtTheLabsSockets(t *testing.T) {
	needLab(t)
	ctx := context.Background()
	l := upLab(t)
	nw := attach(t, l, "drops")
	resp, err := client(nw).Get("http://" + lab.CallbackV4 + "/c/drops")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return dial(ctx, nw, "udp", lab.ResolverV4+":53")
	}}
	for i := 0; i < 20; i++ {
		_, _ = r.LookupHost(ctx, "inference.lab.gatehouse.test")
	}
	if got, err := l.KernelDrops(); err != nil || len(got) != 0 {
		t.Fatalf("a lab that served its session: drops %q, %v; want none", got, err)
	}
	// A socket in the lab's namespace nobody reads, with a small buffer:
	// what does not fit is dropped, and counted.
	err = lab.InNetns(lab.NetnsPath(l.Name()), func() error {
		lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			if err := c.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
			}); err != nil {
				return err
			}
			return serr
		}}
		pc, err := lc.ListenPacket(ctx, "udp4", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer pc.Close()
		c, err := net.Dial("udp4", pc.LocalAddr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		for i := 0; i < 200; i++ {
			_, _ = c.Write([]byte(strings.Repeat("x", 512)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A raw socket has no namespace-wide counter, only its own, read
	// while it is open: one nobody reads overflows on pings.
	err = lab.InNetns(lab.NetnsPath(l.Name()), func() error {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_ICMP)
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096); err != nil {
			return err
		}
		pc, err := net.ListenPacket("ip4:icmp", "127.0.0.1")
		if err != nil {
			return err
		}
		defer pc.Close()
		echo := []byte{8, 0, 0xf7, 0xff, 0, 0, 0, 0} // type 8, checksum for an all-zero rest
		for i := 0; i < 200; i++ {
			_, _ = pc.WriteTo(echo, &net.IPAddr{IP: net.IPv4(127, 0, 0, 1)})
		}
		got, err := l.KernelDrops()
		if err != nil || !strings.Contains(strings.Join(got, " "), "raw:drops +") {
			t.Errorf("with an overflowing raw socket open: drops %q, %v; want raw:drops", got, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.KernelDrops()
	if err != nil || !strings.Contains(strings.Join(got, " "), "Udp:RcvbufErrors +") {
		t.Fatalf("after an unread socket overflowed: drops %q, %v; want Udp:RcvbufErrors", got, err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := l.KernelDrops()
	if err != nil || len(after) == 0 || after[0] != got[0] {
		t.Errorf("after Close: drops %q, %v; want %q, read at the close", after, err, got)
	}
}

// A raw socket's drops are its own and go with it: an endpoint's raw
// socket that overflowed is counted at Close, read before the endpoints
// stop (the reading after would find the socket gone and nothing dropped).
func TestKernelDropsOfARawEndpointCountAtClose(t *testing.T) {
	needLab(t)
	ctx := context.Background()
	l := upLab(t)
	err := lab.InNetns(lab.NetnsPath(l.Name()), func() error {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_ICMP)
		if err != nil {
			return err
		}
		lab.AddStop(l, func(context.Context) error { return syscall.Close(fd) })
		if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096); err != nil {
			return err
		}
		pc, err := net.ListenPacket("ip4:icmp", "127.0.0.1")
		if err != nil {
			return err
		}
		echo := []byte{8, 0, 0xf7, 0xff, 0, 0, 0, 0}
		for i := 0; i < 200; i++ {
			_, _ = pc.WriteTo(echo, &net.IPAddr{IP: net.IPv4(127, 0, 0, 1)})
		}
		lab.AddStop(l, func(context.Context) error { return pc.Close() })
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := l.KernelDrops()
	if err != nil || !strings.Contains(strings.Join(got, " "), "raw:drops +") {
		t.Errorf("after Close: drops %q, %v; want raw:drops from the endpoint closed at Close", got, err)
	}
}
