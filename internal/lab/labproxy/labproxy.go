// Package labproxy is a small egress proxy for tests: HTTP CONNECT,
// absolute-form HTTP and SOCKS5, an allowlist by name, wildcard or IP, and
// switchable naive behaviours that reproduce the ways domain allowlists are
// known to leak. It runs inside a session network namespace the way srt's
// and Codex's proxies do (their sockets, and their lookups through the
// session's resolver, start there), so the lab sees what it sends on.
//
// It is a test instrument: it judges nothing. The lab's endpoints say what
// got through.
package labproxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/legacyip"
)

// Config is the proxy's policy.
type Config struct {
	// Allow and Deny hold exact names, "*.domain" (any name below domain),
	// "*" (anything) and IP literals, each optionally with ":port". Deny
	// wins. Names match case-insensitively.
	Allow, Deny []string
	// DenyAddrs refuses a name whose looked-up address is in one of these
	// (srt's check that an allowed name is not loopback or metadata).
	DenyAddrs []netip.Prefix
	// User and Pass, when set, are demanded (407 / SOCKS5 auth failure).
	User, Pass string
	Naive      Naive
	// Requests, when set, also limits absolute-form requests (the only
	// ones the proxy reads) by method, path and body size, as an HTTP
	// allowlist in front of an API does. Tunnels are not read.
	Requests *Requests
	// Mark, when non-zero, is put (SO_MARK) on every socket the proxy
	// opens, so a ruleset in the namespace can tell the proxy's traffic
	// from the sandbox's own: direct egress closed, the proxy the only way.
	Mark uint32
}

// Requests is an HTTP allowlist: empty lists and a negative MaxBody allow
// anything; a path ending in "*" is a prefix.
type Requests struct {
	Methods, Paths []string
	MaxBody        int64
}

// permits: a body of unknown length (chunked) is refused when MaxBody
// is set, as it cannot be checked before it is sent on.
func (r *Requests) permits(req *http.Request) bool {
	if len(r.Methods) > 0 && !slices.Contains(r.Methods, req.Method) {
		return false
	}
	if len(r.Paths) > 0 && !slices.ContainsFunc(r.Paths, func(p string) bool {
		if pre, ok := strings.CutSuffix(p, "*"); ok {
			return strings.HasPrefix(req.URL.Path, pre)
		}
		return p == req.URL.Path
	}) {
		return false
	}
	return r.MaxBody < 0 || (req.ContentLength >= 0 && req.ContentLength <= r.MaxBody)
}

// Naive switches on known mistakes, one at a time.
type Naive struct {
	// NULSuffix: the allowlist sees the whole name, the lookup sees it
	// as a C string does (up to a NUL byte).
	NULSuffix bool
	// ResolveFirst: the name is looked up before the allowlist check, so
	// even a refused name's lookup leaves (Codex's DNS pre-check).
	ResolveFirst bool
	// Recheck: the address check (DenyAddrs) looks at one lookup, and the
	// connection makes another: a rebinding name moves in between.
	Recheck bool
	// LooseIP: the lists see the host as written; the connection parses it
	// as getaddrinfo does (decimal, hex, short forms, IPv4-mapped IPv6).
	LooseIP bool
	// RouteInner: after a CONNECT is allowed, the tunnel goes where its
	// first request's Host (absolute-form URL included) or TLS server name
	// says, unchecked.
	RouteInner bool
	// TerminateTLS, with RouteInner: TLS inside a tunnel is terminated with
	// the proxy's own certificate and routed by the inner request's Host.
	TerminateTLS bool
}

// Proxy is a running proxy.
type Proxy struct {
	HTTPAddr, SOCKSAddr string // host:port inside the namespace
	cfg                 Config
	netns               string
	res                 *net.Resolver
	tlsConf             *tls.Config
	lns                 []net.Listener
	wg                  sync.WaitGroup

	mu  sync.Mutex
	log []string
}

// Start listens on 127.0.0.1:3128 (HTTP) and 127.0.0.1:1080 (SOCKS5)
// inside the namespace at netns (a path such as targets.Network.NetnsPath).
func Start(ctx context.Context, netns string, cfg Config) (*Proxy, error) {
	p := &Proxy{cfg: cfg, netns: netns}
	p.res = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return p.dial(ctx, network, net.JoinHostPort(lab.ResolverV4, "53"))
	}}
	conf, err := selfSigned()
	if err != nil {
		return nil, err
	}
	p.tlsConf = conf
	for _, l := range []struct {
		addr  string
		serve func(net.Conn)
		dst   *string
	}{{"127.0.0.1:3128", p.serveHTTP, &p.HTTPAddr}, {"127.0.0.1:1080", p.serveSOCKS, &p.SOCKSAddr}} {
		var ln net.Listener
		if err := lab.InNetns(netns, func() (err error) {
			ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp4", l.addr)
			return err
		}); err != nil {
			p.Close()
			return nil, fmt.Errorf("labproxy: listen %s: %w", l.addr, err)
		}
		*l.dst = ln.Addr().String()
		p.lns = append(p.lns, ln)
		p.wg.Go(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				p.wg.Go(func() { defer c.Close(); l.serve(c) })
			}
		})
	}
	return p, nil
}

// Close stops listening and waits for connections in flight.
func (p *Proxy) Close() {
	for _, ln := range p.lns {
		ln.Close()
	}
	p.wg.Wait()
}

// Log is what the proxy decided, one line per decision (for test output).
func (p *Proxy) Log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log...)
}

func (p *Proxy) logf(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log = append(p.log, fmt.Sprintf(format, a...))
}

// dial opens a connection whose socket starts in the proxy's namespace.
func (p *Proxy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := lab.InNetns(p.netns, func() (err error) {
		d := &net.Dialer{Timeout: 3 * time.Second}
		if p.cfg.Mark != 0 {
			d.Control = func(_, _ string, rc syscall.RawConn) error {
				var serr error
				if err := rc.Control(func(fd uintptr) {
					serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MARK, int(p.cfg.Mark))
				}); err != nil {
					return err
				}
				return serr
			}
		}
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

var errDenied = errors.New("blocked by policy")

// open decides on host:port and, when allowed, connects. checked=false
// skips the policy (what RouteInner does with the inner host).
func (p *Proxy) open(ctx context.Context, host, port string, checked bool) (net.Conn, error) {
	nv := p.cfg.Naive
	if checked {
		if nv.ResolveFirst {
			_, _ = p.res.LookupNetIP(ctx, "ip4", host)
		}
		if !nv.NULSuffix && !cleanHost(host) {
			p.logf("refuse %q: odd bytes", host)
			return nil, errDenied
		}
		subject := host
		if !nv.LooseIP {
			if a, ok := looseAddr(host); ok {
				subject = a.String() // canonical, as srt compares literals
			}
		}
		if !p.allowed(subject, port) {
			p.logf("refuse %q:%s", host, port)
			return nil, errDenied
		}
	}
	dialHost := host
	if nv.NULSuffix {
		dialHost, _, _ = strings.Cut(host, "\x00")
	}
	var addr netip.Addr
	literal := true
	if a, err := netip.ParseAddr(strings.Trim(dialHost, "[]")); err == nil {
		addr = a.Unmap()
	} else if a, ok := looseAddr(dialHost); ok {
		addr = a
	} else {
		literal = false
		as, err := p.res.LookupNetIP(ctx, "ip4", dialHost)
		if err != nil || len(as) == 0 {
			p.logf("lookup %q: %v", dialHost, err)
			return nil, fmt.Errorf("lookup %q: %w", dialHost, err)
		}
		addr = as[0].Unmap()
		if checked && p.deniedAddr(addr) {
			p.logf("refuse %q: resolves to %s", host, addr)
			return nil, errDenied
		}
		if checked && nv.Recheck {
			if as, err := p.res.LookupNetIP(ctx, "ip4", dialHost); err == nil && len(as) > 0 {
				addr = as[0].Unmap()
			}
		}
	}
	if checked && literal && !nv.LooseIP && p.deniedAddr(addr) {
		p.logf("refuse %q: address %s", host, addr)
		return nil, errDenied
	}
	p.logf("connect %q -> %s:%s (checked=%v)", host, addr, port, checked)
	return p.dial(ctx, "tcp", net.JoinHostPort(addr.String(), port))
}

func (p *Proxy) deniedAddr(a netip.Addr) bool {
	for _, pf := range p.cfg.DenyAddrs {
		if pf.Contains(a) {
			return true
		}
	}
	return false
}

// looseAddr parses an IP literal in any form a C resolver accepts.
func looseAddr(h string) (netip.Addr, bool) {
	h = strings.Trim(h, "[]")
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap(), true
	}
	return legacyip.Parse(h)
}

// cleanHost: a host name of letters, digits, '-', '_' and '.', or an IP.
func cleanHost(h string) bool {
	if _, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return true
	}
	for _, r := range h {
		if !(r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return h != ""
}

func (p *Proxy) allowed(host, port string) bool {
	return matchAny(p.cfg.Allow, host, port) && !matchAny(p.cfg.Deny, host, port)
}

func matchAny(list []string, host, port string) bool {
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	for _, e := range list {
		pat, pport := strings.ToLower(e), ""
		if i := strings.LastIndex(pat, ":"); i > 0 && !strings.Contains(pat[:i], ":") {
			pat, pport = pat[:i], pat[i+1:]
		}
		if pport != "" && pport != port {
			continue
		}
		switch {
		case pat == "*", pat == host:
			return true
		case strings.HasPrefix(pat, "*.") && strings.HasSuffix(host, pat[1:]):
			return true
		}
	}
	return false
}

func (p *Proxy) authorized(h string) bool {
	if p.cfg.User == "" {
		return true
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte(p.cfg.User+":"+p.cfg.Pass))
	return h == want
}

// serveHTTP handles one client connection: CONNECT or an absolute-form
// request.
func (p *Proxy) serveHTTP(c net.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		return
	}
	// CONNECT's target is taken byte for byte (a NUL included), as a
	// proxy that never validates it would.
	if target, ok := strings.CutPrefix(line, "CONNECT "); ok {
		target, _, _ = strings.Cut(target, " HTTP/")
		hdr, err := textproto.NewReader(br).ReadMIMEHeader()
		if err != nil {
			return
		}
		if !p.authorized(hdr.Get("Proxy-Authorization")) {
			_, _ = io.WriteString(c, "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"lab\"\r\nContent-Length: 0\r\n\r\n")
			return
		}
		host, port, err := net.SplitHostPort(target)
		if err != nil {
			_, _ = io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
			return
		}
		p.tunnel(ctx, c, br, host, port)
		return
	}
	req, err := http.ReadRequest(bufio.NewReader(io.MultiReader(strings.NewReader(line), br)))
	if err != nil {
		return
	}
	if !p.authorized(req.Header.Get("Proxy-Authorization")) {
		_, _ = io.WriteString(c, "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"lab\"\r\nContent-Length: 0\r\n\r\n")
		return
	}
	if req.URL.Host == "" {
		_, _ = io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
		return
	}
	port := req.URL.Port()
	if port == "" {
		port = "80"
	}
	if r := p.cfg.Requests; r != nil && !r.permits(req) {
		p.logf("refuse %s %s (%d bytes): not an allowed request", req.Method, req.URL, req.ContentLength)
		// Read what the client is still sending, so it reads the 403
		// instead of a reset.
		_, _ = io.Copy(io.Discard, io.LimitReader(req.Body, 32<<20))
		refuse(c, errDenied)
		return
	}
	up, err := p.open(ctx, req.URL.Hostname(), port, true)
	if err != nil {
		refuse(c, err)
		return
	}
	defer up.Close()
	req.Header.Del("Proxy-Authorization")
	req.Close = true
	if err := req.Write(up); err != nil {
		return
	}
	_, _ = io.Copy(c, up)
}

func refuse(c net.Conn, err error) {
	code := "502 Bad Gateway"
	if errors.Is(err, errDenied) {
		code = "403 Forbidden"
	}
	_, _ = io.WriteString(c, "HTTP/1.1 "+code+"\r\nX-Proxy-Error: "+strings.ReplaceAll(err.Error(), "\n", " ")+"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
}

// tunnel answers an allowed CONNECT and relays it, routed by its content
// when RouteInner is on.
func (p *Proxy) tunnel(ctx context.Context, c net.Conn, br *bufio.Reader, host, port string) {
	if !p.cfg.Naive.RouteInner {
		up, err := p.open(ctx, host, port, true)
		if err != nil {
			refuse(c, err)
			return
		}
		defer up.Close()
		_, _ = io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		splice(c, br, up, nil)
		return
	}
	// Check the CONNECT host, answer, then look inside.
	if !cleanHost(host) || !p.allowed(host, port) {
		p.logf("refuse CONNECT %q:%s", host, port)
		refuse(c, errDenied)
		return
	}
	_, _ = io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	if first[0] == 0x16 {
		p.innerTLS(ctx, c, br, host, port)
		return
	}
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	to := req.Host
	if req.URL.Host != "" {
		to = req.URL.Host
	}
	up, err := p.open(ctx, hostOf(to), port, false)
	if err != nil {
		return
	}
	defer up.Close()
	req.Close = true
	if err := req.Write(up); err != nil {
		return
	}
	_, _ = io.Copy(c, up)
}

func hostOf(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// innerTLS routes a TLS tunnel by its server name, or (TerminateTLS) by
// the Host of the request inside it.
func (p *Proxy) innerTLS(ctx context.Context, c net.Conn, br *bufio.Reader, host, port string) {
	if p.cfg.Naive.TerminateTLS {
		tc := tls.Server(&rwConn{Conn: c, r: br, w: c}, p.tlsConf)
		req, err := http.ReadRequest(bufio.NewReader(tc))
		if err != nil {
			return
		}
		up, err := p.open(ctx, hostOf(req.Host), port, false)
		if err != nil {
			return
		}
		defer up.Close()
		utc := tls.Client(up, &tls.Config{ServerName: hostOf(req.Host), InsecureSkipVerify: true}) //nolint:gosec // lab endpoints
		req.Close = true
		if err := req.Write(utc); err != nil {
			return
		}
		_, _ = io.Copy(tc, utc)
		return
	}
	// Read the ClientHello through a server that stops at the name; what
	// it read is replayed upstream. Its alert goes nowhere.
	var hello bytes.Buffer
	sni := ""
	probeConn := &rwConn{Conn: c, r: io.TeeReader(br, &hello), w: io.Discard}
	_ = tls.Server(probeConn, &tls.Config{GetConfigForClient: func(ch *tls.ClientHelloInfo) (*tls.Config, error) {
		sni = ch.ServerName
		return nil, errors.New("name read")
	}}).HandshakeContext(ctx)
	to := host
	if sni != "" {
		to = sni
	}
	up, err := p.open(ctx, to, port, false)
	if err != nil {
		return
	}
	defer up.Close()
	splice(c, br, up, hello.Bytes())
}

// rwConn reads from r and writes to w, for TLS over a buffered reader.
type rwConn struct {
	net.Conn
	r io.Reader
	w io.Writer
}

func (c *rwConn) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c *rwConn) Write(b []byte) (int, error) { return c.w.Write(b) }

// splice relays both ways until one side ends (after sending pre upstream).
func splice(c net.Conn, br *bufio.Reader, up net.Conn, pre []byte) {
	if len(pre) > 0 {
		if _, err := up.Write(pre); err != nil {
			return
		}
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, br); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	_ = up.SetDeadline(time.Now())
	_ = c.SetDeadline(time.Now())
	<-done
}

// serveSOCKS handles one SOCKS5 client (RFC 1928; RFC 1929 when the
// proxy demands credentials).
func (p *Proxy) serveSOCKS(c net.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	var hd [2]byte
	if _, err := io.ReadFull(br, hd[:]); err != nil || hd[0] != 5 {
		return
	}
	methods := make([]byte, hd[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return
	}
	want := byte(0)
	if p.cfg.User != "" {
		want = 2
	}
	if !bytes.Contains(methods, []byte{want}) {
		_, _ = c.Write([]byte{5, 0xff})
		return
	}
	_, _ = c.Write([]byte{5, want})
	if want == 2 {
		user, pass, ok := readUserPass(br)
		if !ok || user != p.cfg.User || pass != p.cfg.Pass {
			_, _ = c.Write([]byte{1, 1})
			return
		}
		_, _ = c.Write([]byte{1, 0})
	}
	var rq [4]byte
	if _, err := io.ReadFull(br, rq[:]); err != nil || rq[1] != 1 {
		return
	}
	var host string
	switch rq[3] {
	case 1, 4:
		b := make([]byte, map[byte]int{1: 4, 4: 16}[rq[3]])
		if _, err := io.ReadFull(br, b); err != nil {
			return
		}
		a, _ := netip.AddrFromSlice(b)
		host = a.Unmap().String()
	case 3:
		n, err := br.ReadByte()
		if err != nil {
			return
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return
		}
		host = string(b)
	default:
		return
	}
	var pb [2]byte
	if _, err := io.ReadFull(br, pb[:]); err != nil {
		return
	}
	port := strconv.Itoa(int(binary.BigEndian.Uint16(pb[:])))
	up, err := p.open(ctx, host, port, true)
	if err != nil {
		_, _ = c.Write([]byte{5, 2, 0, 1, 0, 0, 0, 0, 0, 0}) // not allowed by ruleset
		return
	}
	defer up.Close()
	_, _ = c.Write([]byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0})
	splice(c, br, up, nil)
}

func readUserPass(br *bufio.Reader) (string, string, bool) {
	read := func() (string, bool) {
		n, err := br.ReadByte()
		if err != nil {
			return "", false
		}
		b := make([]byte, n)
		_, err = io.ReadFull(br, b)
		return string(b), err == nil
	}
	if v, err := br.ReadByte(); err != nil || v != 1 {
		return "", "", false
	}
	u, ok1 := read()
	pw, ok2 := read()
	return u, pw, ok1 && ok2
}

// selfSigned is the proxy's own certificate for TerminateTLS.
func selfSigned() (*tls.Config, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "labproxy"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}, nil
}
