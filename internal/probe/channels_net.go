package probe

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/unixsock"
)

// connRead bounds how long a receiver reads one connection.
const connRead = 500 * time.Millisecond

func sendNet(ctx context.Context, ch channel, v string) error {
	host, _, err := net.SplitHostPort(ch.rest)
	if err != nil {
		return err
	}
	msg := []byte("GATEHOUSE " + v + "\n")
	if ch.scheme == "udp" && host == "255.255.255.255" {
		return sendBroadcast(ch.rest, msg)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, ch.scheme, ch.rest)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	_, err = c.Write(msg)
	return err
}

// sendBroadcast sends one datagram to the link's broadcast address.
func sendBroadcast(addr string, msg []byte) error {
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_BROADCAST, 1)
		})
		return errors.Join(err, serr)
	}}
	pc, err := lc.ListenPacket(context.Background(), "udp4", ":0")
	if err != nil {
		return err
	}
	defer pc.Close()
	ua, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		return err
	}
	_, err = pc.WriteTo(msg, ua)
	return err
}

// receiveNet listens on every address of the port in ch until ctx ends.
func receiveNet(ctx context.Context, ch channel, f *found) error {
	_, port, err := net.SplitHostPort(ch.rest)
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	if ch.scheme == "udp" {
		pc, err := lc.ListenPacket(ctx, "udp", ":"+port)
		if err != nil {
			return err
		}
		defer pc.Close()
		stop := context.AfterFunc(ctx, func() { pc.Close() })
		defer stop()
		f.listening()
		buf := make([]byte, readCap)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return ctxErrOr(ctx, err)
			}
			f.add(buf[:n], "udp from "+from.String())
		}
	}
	l, err := lc.Listen(ctx, "tcp", ":"+port)
	if err != nil {
		return err
	}
	return acceptAll(ctx, l, "tcp", f)
}

// acceptAll reads each connection to l, one at a time, until ctx ends.
func acceptAll(ctx context.Context, l net.Listener, what string, f *found) error {
	defer l.Close()
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	f.listening()
	for {
		c, err := l.Accept()
		if err != nil {
			return ctxErrOr(ctx, err)
		}
		_ = c.SetDeadline(time.Now().Add(connRead))
		b, _ := unixsock.ReadSome(c, readCap)
		from := what
		if ra := c.RemoteAddr(); ra != nil && ra.String() != "" && ra.String() != "@" {
			from += " from " + ra.String()
		}
		c.Close()
		f.add(b, from)
	}
}

func ctxErrOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// receiveUnix listens on a socket file of its own in a shared folder.
func receiveUnix(ctx context.Context, dir, own string, f *found, note func(string)) error {
	p := filepath.Join(dir, wire.XSSocket(own))
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "unix", p)
	if err != nil {
		return err
	}
	note(p)
	defer os.Remove(p)
	return acceptAll(ctx, l, "unix socket "+p, f)
}

// sendUnix connects to every other session's socket file in dir.
func sendUnix(ctx context.Context, dir, v string) error {
	ms, _ := filepath.Glob(filepath.Join(dir, wire.XSPrefix+"*.sock"))
	own := wire.XSPrefix + wire.Tag(v) + ".sock"
	return sendEach(ctx, "unix", ms, func(m string) bool { return filepath.Base(m) == own }, v)
}

// receiveAbstract listens on an abstract socket named after its own value.
func receiveAbstract(ctx context.Context, name, own string, f *found) error {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "unix", "@"+name+"-"+wire.Tag(own))
	if err != nil {
		return err
	}
	return acceptAll(ctx, l, "abstract socket @"+name, f)
}

// sendAbstract finds the other sessions' abstract sockets in /proc/net/unix
// (which lists those of this network namespace) and connects to each.
func sendAbstract(ctx context.Context, name, v string) error {
	fh, err := os.Open("/proc/net/unix")
	if err != nil {
		return err
	}
	defer fh.Close()
	var ms []string
	sc := bufio.NewScanner(io.LimitReader(fh, 1<<20))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if n := len(fields); n > 0 && strings.HasPrefix(fields[n-1], "@"+name+"-") {
			ms = append(ms, fields[n-1])
		}
	}
	own := "@" + name + "-" + wire.Tag(v)
	return sendEach(ctx, "unix", ms, func(m string) bool { return m == own }, v)
}

// sendEach writes the value to every address but the sender's own; with no
// peer to write to, it reports that as the error.
func sendEach(ctx context.Context, network string, addrs []string, own func(string) bool, v string) error {
	sent := false
	var last error = errors.New("no other session's socket found")
	for _, a := range addrs {
		if own(a) {
			continue
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, network, a)
		if err != nil {
			last = err
			continue
		}
		_, err = c.Write([]byte("GATEHOUSE " + v + "\n"))
		c.Close()
		if err == nil {
			sent = true
		} else {
			last = err
		}
	}
	if sent {
		return nil
	}
	return last
}
