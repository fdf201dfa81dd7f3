package lab

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// startCallback starts the team-controlled server a forbidden callback
// would reach, on every callback address (documentation range and
// public-looking): HTTP and HTTPS (each connection recorded at accept, then
// each request), raw TCP and UDP, a catch-all recorder for every other TCP
// and UDP port (catchall.go), and a recorder of ICMP echo requests.
func (l *Lab) startCallback(ctx context.Context) error {
	conf, err := selfSignedTLS(l.addrs.Callback)
	if err != nil {
		return fmt.Errorf("callback: %w", err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := httpHit("callback", r, readBody(r))
		l.record(h, h.Src)
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintln(w, "ok")
	})
	for _, host := range l.addrs.Callback {
		for _, s := range []struct {
			port int
			conf *tls.Config
		}{{CallbackHTTPPort, nil}, {CallbackHTTPSPort, conf}} {
			addr := hostPort(host, s.port)
			ln, err := l.listenTCP(ctx, addr)
			if err != nil {
				return fmt.Errorf("callback: %w", err)
			}
			l.serveHTTPOn(l.tap(ln, "callback"), addr, h, s.conf)
		}
		if err := l.serveTCP(ctx, hostPort(host, CallbackTCPPort)); err != nil {
			return fmt.Errorf("callback: %w", err)
		}
		if err := l.serveUDP(ctx, hostPort(host, CallbackUDPPort)); err != nil {
			return fmt.Errorf("callback: %w", err)
		}
		if err := l.serveCatchAll(ctx, host); err != nil {
			return fmt.Errorf("callback: %w", err)
		}
	}
	if err := l.serveICMP(ctx); err != nil {
		return fmt.Errorf("callback: %w", err)
	}
	return nil
}

// serveTCP records the first bytes of every connection and answers "ok".
// A connection that sends nothing is still a hit: it reached us.
func (l *Lab) serveTCP(ctx context.Context, addr string) error {
	ln, err := l.listenTCP(ctx, addr)
	if err != nil {
		return err
	}
	stop := serveConns(l.conns.track(ln), func(c net.Conn) {
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, maxData)
		n, _ := c.Read(buf)
		h := evidence.Hit{Endpoint: "callback", Proto: "tcp", Src: c.RemoteAddr().String(),
			Dst: c.LocalAddr().String(), Data: printable(buf[:n])}
		h.Summary = fmt.Sprintf("tcp %d bytes: %s", n, h.Data)
		l.record(h, h.Src)
		_, _ = c.Write([]byte("ok\n"))
	})
	// Each connection ends within its 2 s deadline.
	l.stops = append(l.stops, func(context.Context) error { return stop() })
	return nil
}

// serveUDP records every datagram and answers "ok".
func (l *Lab) serveUDP(ctx context.Context, addr string) error {
	pc, err := l.listenUDP(ctx, addr)
	if err != nil {
		return err
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
			h := evidence.Hit{Endpoint: "callback", Proto: "udp", Src: from.String(),
				Dst: pc.LocalAddr().String(), Data: printable(buf[:min(n, maxData)])}
			h.Summary = fmt.Sprintf("udp %d bytes: %s", n, h.Data)
			l.record(h, h.Src)
			_, _ = pc.WriteTo([]byte("ok\n"), from)
		}
	}()
	l.stops = append(l.stops, func(context.Context) error {
		err := pc.Close()
		<-done
		return err
	})
	return nil
}
