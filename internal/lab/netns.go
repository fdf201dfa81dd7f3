package lab

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	_ "github.com/gatehouse-dev/gatehouse/internal/mainthread" // keep locked goroutines off the main thread
	"github.com/gatehouse-dev/gatehouse/internal/namedns"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// netnsDir is where named namespaces are bind-mounted (as `ip netns add`
// does; see internal/namedns).
const netnsDir = namedns.Dir

// NetnsPath is the file that names a network namespace, as made by `ip
// netns add` or namedns.Add.
func NetnsPath(name string) string { return namedns.Path(name) }

// InNetns runs fn on an OS thread that has joined the network namespace at
// path, then returns the thread to the namespace it came from. Sockets that
// fn creates stay in that namespace for their whole life, so they can be used
// from any goroutine afterwards. fn must not start goroutines that expect to
// inherit the namespace (they would not) and must not resolve names.
func InNetns(path string, fn func() error) error {
	errc := make(chan error, 1)
	// A fresh goroutine, so the caller's thread is never touched and a thread
	// we cannot bring back can simply die with it.
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open own netns: %w", err)
			return
		}
		defer orig.Close()
		target, err := os.Open(path)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open netns: %w", err)
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns %s: %w", path, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// Leave the thread locked: when this goroutine returns, the Go
			// runtime ends the thread instead of reusing it in the wrong ns.
			errc <- fmt.Errorf("setns back from %s: %w", path, err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// setSysctl writes a /proc/sys value inside the namespace at path. Entries
// under /proc/sys/net belong to the netns of the thread that opens them.
func setSysctl(path, key, value string) error {
	file := filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
	return InNetns(path, func() error {
		if err := os.WriteFile(file, []byte(value), 0o644); err != nil {
			return fmt.Errorf("sysctl %s: %w", key, err)
		}
		return nil
	})
}

// readSysctl reads a /proc/sys value inside the namespace at path.
func readSysctl(path, key string) (string, error) {
	file := filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
	var out string
	err := InNetns(path, func() error {
		b, err := os.ReadFile(file)
		out = strings.TrimSpace(string(b))
		return err
	})
	return out, err
}

// rtnlAt opens a route netlink handle bound to the namespace at path. Its
// socket is made on InNetns's throwaway thread and belongs to that
// namespace for its whole life, so the handle serves from any goroutine
// without switching a thread again. The caller closes it.
func rtnlAt(path string) (*netlink.Handle, error) {
	var h *netlink.Handle
	err := InNetns(path, func() (err error) {
		h, err = netlink.NewHandle(unix.NETLINK_ROUTE)
		return err
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// linkUp sets the interface dev of namespace ns up (`ip link set DEV up`).
func linkUp(h *netlink.Handle, ns, dev string) error {
	lk, err := h.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("%s: set %s up: %w", ns, dev, err)
	}
	if err := h.LinkSetUp(lk); err != nil {
		return fmt.Errorf("%s: set %s up: %w", ns, dev, err)
	}
	return nil
}

// addAddrs puts addresses ("a.b.c.d/n", "x::y/n") on dev in namespace ns.
// IPv6 addresses skip duplicate address detection (nodad): otherwise they
// stay "tentative" for a moment and binding to them fails. IPv4 ones get no
// broadcast address, as with `ip addr add`.
func addAddrs(h *netlink.Handle, ns, dev string, addrs ...string) error {
	lk, err := h.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("%s: address %s: %w", ns, dev, err)
	}
	for _, s := range addrs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return fmt.Errorf("%s: address %s on %s: %w", ns, s, dev, err)
		}
		a := &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}}
		if p.Addr().Is6() {
			a.Flags = unix.IFA_F_NODAD
		} else {
			a.Broadcast = net.IPv4zero // none; the library would compute one
		}
		if err := h.AddrAdd(lk, a); err != nil {
			return fmt.Errorf("%s: add address %s on %s: %w", ns, s, dev, err)
		}
	}
	return nil
}

// addDefaultRoute routes everything of gw's family via gw (`ip route add
// default via GW`, protocol boot as iproute2 sets it).
func addDefaultRoute(h *netlink.Handle, ns string, gw netip.Addr) error {
	// No destination: the route's family is the gateway's.
	r := &netlink.Route{Gw: gw.AsSlice(), Protocol: unix.RTPROT_BOOT, Table: unix.RT_TABLE_MAIN}
	if err := h.RouteAdd(r); err != nil {
		return fmt.Errorf("%s: add default route via %s: %w", ns, gw, err)
	}
	return nil
}

// delLink removes the interface dev of namespace ns; one that is already
// gone is not an error.
func delLink(h *netlink.Handle, ns, dev string) error {
	lk, err := h.LinkByName(dev)
	var nf netlink.LinkNotFoundError
	if errors.As(err, &nf) {
		return nil
	}
	if err == nil {
		err = h.LinkDel(lk)
	}
	if err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("%s: delete %s: %w", ns, dev, err)
	}
	return nil
}

// namespaces lists the named network namespaces (the entries of
// /run/netns, which is what `ip netns list` reads).
func namespaces() ([]string, error) {
	entries, err := os.ReadDir(netnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, nil
}
