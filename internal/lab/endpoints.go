package lab

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// startEndpoints starts every controlled endpoint inside the lab namespace.
// Each start registers its stop in l.stops, so a partial start is undone by
// Close.
func (l *Lab) startEndpoints(ctx context.Context) error {
	for _, start := range []func(context.Context) error{
		l.startCallback, l.startInference, l.startIntake, l.startDNS, l.startMetadata, l.startHostService,
	} {
		if err := start(ctx); err != nil {
			return fmt.Errorf("start endpoints: %w", err)
		}
	}
	return nil
}

// family returns "4" or "6" for an "ip:port" address.
func family(addr string) (string, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return "", err
	}
	if ap.Addr().Is4() {
		return "4", nil
	}
	return "6", nil
}

// listenTCP opens a TCP listener on addr inside the lab namespace.
func (l *Lab) listenTCP(ctx context.Context, addr string) (net.Listener, error) {
	fam, err := family(addr)
	if err != nil {
		return nil, err
	}
	var ln net.Listener
	err = InNetns(NetnsPath(l.name), func() (err error) {
		ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp"+fam, addr)
		return err
	})
	return ln, err
}

// listenUDP opens a UDP socket on addr inside the lab namespace.
func (l *Lab) listenUDP(ctx context.Context, addr string) (net.PacketConn, error) {
	fam, err := family(addr)
	if err != nil {
		return nil, err
	}
	var pc net.PacketConn
	err = InNetns(NetnsPath(l.name), func() (err error) {
		pc, err = (&net.ListenConfig{}).ListenPacket(ctx, "udp"+fam, addr)
		return err
	})
	return pc, err
}

// serveHTTP serves h on a new listener at addr (TLS when conf is set).
func (l *Lab) serveHTTP(ctx context.Context, addr string, h http.Handler, conf *tls.Config) error {
	ln, err := l.listenTCP(ctx, addr)
	if err != nil {
		return err
	}
	l.serveHTTPOn(ln, addr, h, conf)
	return nil
}

// serveHTTPOn serves h on ln (TLS when conf is set) and registers a stop
// that waits for requests in flight.
func (l *Lab) serveHTTPOn(ln net.Listener, addr string, h http.Handler, conf *tls.Config) {
	ln = l.conns.track(ln)
	if conf != nil {
		ln = tls.NewListener(ln, conf)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ConnState:         l.busy.httpState,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		ErrorLog:          log.New(logWriter(l.logf), "lab http "+addr+": ", 0),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			l.logf("lab %s: http %s: %v", l.name, addr, err)
		}
	}()
	l.stops = append(l.stops, func(ctx context.Context) error {
		err := srv.Shutdown(ctx)
		if err != nil {
			err = errors.Join(err, srv.Close())
		}
		<-done
		if err != nil {
			return fmt.Errorf("http %s: %w", addr, err)
		}
		return nil
	})
}

// httpHit describes a request as a hit: the request line as summary, the
// headers and the first bytes of the body as data.
func httpHit(endpoint string, r *http.Request, body []byte) evidence.Hit {
	proto := "http"
	if r.TLS != nil {
		proto = "https"
	}
	dst := ""
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		dst = a.String()
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s %s %s\r\nHost: %s\r\n", r.Method, r.URL.RequestURI(), r.Proto, r.Host)
	keys := make([]string, 0, len(r.Header))
	for k := range r.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range r.Header[k] {
			fmt.Fprintf(&sb, "%s: %s\r\n", k, v)
		}
	}
	sb.WriteString("\r\n")
	sb.WriteString(printable(body))
	summary := fmt.Sprintf("%s %s host=%s", r.Method, r.URL.RequestURI(), r.Host)
	if r.TLS != nil {
		// The server name and the Host may differ (domain fronting): both
		// are what arrived, and the oracle says which one reached where.
		summary += " sni=" + r.TLS.ServerName
	}
	return evidence.Hit{
		Endpoint: endpoint,
		Proto:    proto,
		Src:      r.RemoteAddr,
		Dst:      dst,
		Summary:  summary,
		Data:     sb.String(),
		Attempt:  attemptLabel(r.Header.Get("X-Gatehouse-Attempt")),
		Method:   r.Method,
		Path:     r.URL.Path,
		// What was read; requests at the allowed destination count their
		// whole body (readCounted).
		BodyBytes: int64(len(body)),
	}
}

// readCounted reads the first maxData bytes of the body, then counts the
// rest without keeping it: the allowed destination's hits say how much
// arrived, however large (the server's read timeout bounds the time).
func readCounted(r *http.Request) ([]byte, int64) {
	b := readBody(r)
	rest, _ := io.Copy(io.Discard, r.Body)
	return b, int64(len(b)) + rest
}

// allowedHit is httpHit for the allowed destination, with the full body size.
func allowedHit(endpoint string, r *http.Request) evidence.Hit {
	b, n := readCounted(r)
	h := httpHit(endpoint, r, b)
	h.BodyBytes = n
	return h
}

// readBody reads at most maxData bytes of the request body.
func readBody(r *http.Request) []byte {
	b, _ := io.ReadAll(io.LimitReader(r.Body, maxData))
	return b
}

// hostPort joins an address and a port, bracketing IPv6.
func hostPort(host string, port int) string {
	return net.JoinHostPort(host, fmt.Sprint(port))
}

// logWriter sends the standard logger's lines (TLS handshake failures from
// probes that do not trust our certificate, mostly) to Options.Logf.
type logWriter func(format string, a ...any)

func (w logWriter) Write(p []byte) (int, error) {
	w("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// serveConns accepts connections on ln and handles each in its own
// goroutine. The returned stop closes ln and waits for the handlers, which
// must end by their own deadlines.
func serveConns(ln net.Listener, handle func(net.Conn)) (stop func() error) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by stop
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return func() error {
		err := ln.Close()
		wg.Wait()
		return err
	}
}

// attemptLabel keeps an attempt label short and plain: it comes from inside
// the sandbox.
func attemptLabel(v string) string {
	if len(v) > 64 {
		v = v[:64]
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '@' || r == '.' {
			return r
		}
		return -1
	}, v)
}
