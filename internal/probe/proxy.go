package probe

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// errNoProxy: the environment names no proxy of the kind the step needs.
var errNoProxy = errors.New("no proxy given")

// aLongTimeAgo is a deadline in the past: it wakes every blocked read.
var aLongTimeAgo = time.Unix(1, 0)

// doProxy makes one attempt through the proxy the environment names. The
// probe finds the proxy itself (findProxy) and speaks to it directly, so
// NO_PROXY and an HTTP library's rules cannot keep an attempt off it.
func doProxy(ctx context.Context, s wire.Step, rep *wire.Report) error {
	pu, err := findProxy(s.Via)
	if err != nil {
		return err
	}
	switch s.Via {
	case wire.ViaHTTP:
		return proxyHTTP(ctx, pu, s, rep)
	case wire.ViaConnect, wire.ViaSOCKS5:
		c, err := openTunnel(ctx, pu, s.Via, s.Target, rep)
		if err != nil {
			return err
		}
		defer c.Close()
		stopOnDone(ctx, c)
		return overTunnel(ctx, c, s, rep)
	}
	return fmt.Errorf("unknown via %q", s.Via)
}

// proxyEnv lists the variables a proxy may be named in, in the order each
// way prefers them. Names match in any case (HTTP_PROXY, http_proxy, ...).
var proxyEnv = map[string][]string{
	wire.ViaHTTP:    {"HTTP_PROXY", "ALL_PROXY", "HTTPS_PROXY"},
	wire.ViaConnect: {"HTTPS_PROXY", "ALL_PROXY", "HTTP_PROXY"},
	wire.ViaSOCKS5:  {"ALL_PROXY", "HTTPS_PROXY", "HTTP_PROXY"},
}

// findProxy returns the first proxy URL in the environment that can serve
// via: an http proxy for http and connect, a socks5 one for socks5. A value
// with no scheme is an http proxy, as curl reads it.
func findProxy(via string) (*url.URL, error) {
	names, ok := proxyEnv[via]
	if !ok {
		return nil, fmt.Errorf("unknown via %q", via)
	}
	env := os.Environ()
	for _, want := range names {
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			if !strings.EqualFold(k, want) || strings.TrimSpace(v) == "" {
				continue
			}
			v = strings.TrimSpace(v)
			if !strings.Contains(v, "://") {
				v = "http://" + v
			}
			u, err := url.Parse(v)
			if err != nil || u.Host == "" {
				continue
			}
			socks := strings.HasPrefix(strings.ToLower(u.Scheme), "socks5") || strings.EqualFold(u.Scheme, "socks")
			if (via == wire.ViaSOCKS5) == socks && (socks || strings.EqualFold(u.Scheme, "http")) {
				return u, nil
			}
		}
	}
	if via == wire.ViaSOCKS5 {
		// A SOCKS endpoint may sit in any *_PROXY variable (srt names its
		// SOCKS bridge in FTP_PROXY): an agent looking for a way round the
		// HTTP proxy would find it there too.
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			if !strings.HasSuffix(strings.ToUpper(k), "_PROXY") || strings.EqualFold(k, "NO_PROXY") {
				continue
			}
			if u, err := url.Parse(strings.TrimSpace(v)); err == nil && u.Host != "" &&
				(strings.HasPrefix(strings.ToLower(u.Scheme), "socks5") || strings.EqualFold(u.Scheme, "socks")) {
				return u, nil
			}
		}
	}
	return nil, fmt.Errorf("%w: none of %s (any case) names a %s proxy", errNoProxy, strings.Join(names, ", "), map[bool]string{true: "socks5", false: "http"}[via == wire.ViaSOCKS5])
}

// proxyAddr is the proxy's host:port (3128 or 1080 when the URL has none).
func proxyAddr(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if strings.HasPrefix(strings.ToLower(u.Scheme), "socks") {
		return net.JoinHostPort(u.Hostname(), "1080")
	}
	return net.JoinHostPort(u.Hostname(), "3128")
}

// basicAuth is the Proxy-Authorization value for the URL's userinfo ("" without).
func basicAuth(u *url.URL) string {
	if u.User == nil {
		return ""
	}
	pw, _ := u.User.Password()
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw))
}

// stopOnDone closes c when ctx ends, so a silent proxy cannot hold the
// attempt past its deadline.
func stopOnDone(ctx context.Context, c net.Conn) {
	if d, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(d)
	}
	go func() { <-ctx.Done(); _ = c.SetDeadline(aLongTimeAgo) }()
}

// proxyHTTP sends the request to the proxy in absolute form, and follows
// redirects (Step.Follow) through the proxy too.
func proxyHTTP(ctx context.Context, pu *url.URL, s wire.Step, rep *wire.Report) error {
	target, method, body := s.Target, s.Method, bodyOf(s)
	for hop := 0; ; hop++ {
		c, err := httpDial(ctx, "tcp", proxyAddr(pu))
		if err != nil {
			return err
		}
		stopOnDone(ctx, c)
		req, err := innerRequest(ctx, method, target, s.Headers, body)
		if err != nil {
			c.Close()
			return err
		}
		if a := basicAuth(pu); a != "" {
			req.Header.Set("Proxy-Authorization", a)
		}
		resp, err := proxyExchange(c, req, true, rep)
		c.Close()
		if err != nil {
			return err
		}
		loc := resp.Header.Get("Location")
		if !s.Follow || resp.StatusCode < 300 || resp.StatusCode > 399 || loc == "" {
			return nil
		}
		if hop >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		base, _ := url.Parse(target)
		next, err := base.Parse(loc)
		if err != nil {
			return fmt.Errorf("redirect: %w", err)
		}
		target, method, body = next.String(), http.MethodGet, ""
	}
}

// openTunnel asks the proxy for a tunnel to target (host:port, sent as
// given: NUL and odd bytes included).
func openTunnel(ctx context.Context, pu *url.URL, via, target string, rep *wire.Report) (net.Conn, error) {
	c, err := httpDial(ctx, "tcp", proxyAddr(pu))
	if err != nil {
		return nil, err
	}
	stopOnDone(ctx, c)
	if via == wire.ViaSOCKS5 {
		err = socksConnect(c, pu, target)
	} else {
		err = httpConnect(c, pu, target, rep)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// errProxyRefused: the proxy answered, and said no.
type errProxyRefused struct{ what string }

func (e errProxyRefused) Error() string { return "proxy refused: " + e.what }

// hungUp: a proxy that closes the connection instead of answering has
// refused (a timeout stays a timeout).
func hungUp(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
		return errProxyRefused{what + ": closed without answering"}
	}
	return fmt.Errorf("%s: %w", what, err)
}

func httpConnect(c net.Conn, pu *url.URL, target string, rep *wire.Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "CONNECT %s HTTP/1.1\r\n", target)
	if !strings.ContainsFunc(target, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		// A control byte goes in the request line only: a header carrying
		// it would make the proxy's parser refuse before its check runs.
		fmt.Fprintf(&b, "Host: %s\r\n", target)
	}
	if a := basicAuth(pu); a != "" {
		fmt.Fprintf(&b, "Proxy-Authorization: %s\r\n", a)
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(c, b.String()); err != nil {
		return err
	}
	// Read the status line and headers byte by byte: what follows belongs
	// to the tunnel and must not be buffered away.
	head, err := readHead(c)
	if err != nil {
		return hungUp("CONNECT", err)
	}
	line, _, _ := strings.Cut(head, "\r\n")
	f := strings.Fields(line)
	if len(f) < 2 {
		return fmt.Errorf("CONNECT: bad status line %q", line)
	}
	code, err := strconv.Atoi(f[1])
	if err != nil {
		return fmt.Errorf("CONNECT: bad status line %q", line)
	}
	rep.Status = code
	if code < 200 || code > 299 {
		rep.Excerpt = head
		return errProxyRefused{fmt.Sprintf("CONNECT answered %d", code)}
	}
	return nil
}

// readHead reads up to the end of an HTTP head, one byte at a time.
func readHead(r io.Reader) (string, error) {
	var buf []byte
	one := make([]byte, 1)
	for len(buf) < 16<<10 {
		if _, err := io.ReadFull(r, one); err != nil {
			return string(buf), err
		}
		buf = append(buf, one[0])
		if strings.HasSuffix(string(buf), "\r\n\r\n") {
			return string(buf), nil
		}
	}
	return string(buf), errors.New("head too long")
}

// socksConnect speaks SOCKS5 (RFC 1928, with RFC 1929 username/password
// when the URL has userinfo) and asks for target: an IP literal as an
// address, anything else as a name of up to 255 bytes, sent as given.
func socksConnect(c net.Conn, pu *url.URL, target string) error {
	host, portS, err := net.SplitHostPort(target)
	if err != nil {
		return err
	}
	port, err := strconv.ParseUint(portS, 10, 16)
	if err != nil {
		return fmt.Errorf("port %q: %w", portS, err)
	}
	methods := []byte{0x00}
	if pu.User != nil {
		methods = []byte{0x02, 0x00}
	}
	if _, err := c.Write(append([]byte{5, byte(len(methods))}, methods...)); err != nil {
		return err
	}
	var sel [2]byte
	if _, err := io.ReadFull(c, sel[:]); err != nil {
		return hungUp("socks5 greeting", err)
	}
	switch sel[1] {
	case 0x00:
	case 0x02:
		user := pu.User.Username()
		pw, _ := pu.User.Password()
		if len(user) > 255 || len(pw) > 255 {
			return errors.New("socks credentials too long")
		}
		msg := append([]byte{1, byte(len(user))}, user...)
		msg = append(append(msg, byte(len(pw))), pw...)
		if _, err := c.Write(msg); err != nil {
			return err
		}
		var st [2]byte
		if _, err := io.ReadFull(c, st[:]); err != nil {
			return fmt.Errorf("socks auth: %w", err)
		}
		if st[1] != 0 {
			return errProxyRefused{"socks5 credentials rejected"}
		}
	default:
		return errProxyRefused{fmt.Sprintf("socks5 method %#x", sel[1])}
	}
	req := []byte{5, 1, 0}
	if a, err := netip.ParseAddr(host); err == nil && a.Zone() == "" {
		if a.Is4() {
			req = append(req, 1)
		} else {
			req = append(req, 4)
		}
		req = append(req, a.AsSlice()...)
	} else {
		if len(host) > 255 {
			return errors.New("socks host name longer than 255 bytes")
		}
		req = append(append(req, 3, byte(len(host))), host...)
	}
	req = binary.BigEndian.AppendUint16(req, uint16(port))
	if _, err := c.Write(req); err != nil {
		return err
	}
	var head [4]byte
	if _, err := io.ReadFull(c, head[:]); err != nil {
		return hungUp("socks5 request", err)
	}
	if head[1] != 0 {
		return errProxyRefused{fmt.Sprintf("socks5 reply %d", head[1])}
	}
	var skip int
	switch head[3] {
	case 1:
		skip = 4 + 2
	case 4:
		skip = 16 + 2
	case 3:
		var n [1]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return err
		}
		skip = int(n[0]) + 2
	default:
		return fmt.Errorf("socks reply address type %d", head[3])
	}
	_, err = io.CopyN(io.Discard, c, int64(skip))
	return err
}

// overTunnel sends, inside an open tunnel, the request for Step.Inner (TLS
// first for https, with Step.SNI as server name when set), or else the
// step's Payload as raw bytes.
func overTunnel(ctx context.Context, c net.Conn, s wire.Step, rep *wire.Report) error {
	if s.Inner == "" {
		if _, err := io.WriteString(c, s.Payload); err != nil {
			return err
		}
		buf := make([]byte, readCap)
		n, err := c.Read(buf)
		rep.Bytes, rep.Excerpt = n, string(buf[:n])
		if n > 0 || errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	u, err := url.Parse(s.Inner)
	if err != nil {
		return err
	}
	conn := c
	if u.Scheme == "https" {
		sni := s.SNI
		if sni == "" {
			sni = u.Hostname()
		}
		tc := tls.Client(c, &tls.Config{ServerName: sni, InsecureSkipVerify: true}) //nolint:gosec // reachability, not identity
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("tls in tunnel: %w", err)
		}
		conn = tc
	}
	req, err := innerRequest(ctx, s.Method, s.Inner, s.Headers, bodyOf(s))
	if err != nil {
		return err
	}
	_, err = proxyExchange(conn, req, s.Absolute, rep)
	return err
}

// innerRequest builds a request carrying the session tag; a "Host" header
// in headers replaces the URL's host on the wire (domain fronting).
func innerRequest(ctx context.Context, method, target string, headers map[string]string, body string) (*http.Request, error) {
	if method == "" {
		method = http.MethodGet
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range headers {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	req.Close = true
	tagRequest(ctx, req)
	return req, nil
}

// proxyExchange writes req (absolute-form request line when absolute) and reads
// the response into rep.
func proxyExchange(c net.Conn, req *http.Request, absolute bool, rep *wire.Report) (*http.Response, error) {
	var err error
	if absolute {
		err = req.WriteProxy(c)
	} else {
		err = req.Write(c)
	}
	if err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	rep.Status = resp.StatusCode
	var head limitedBuffer
	head.max = wire.MaxExcerptLen
	n, err := io.Copy(&head, io.LimitReader(resp.Body, httpBodyCap))
	rep.Bytes += int(n)
	rep.Excerpt = string(head.buf)
	if err != nil && !errors.Is(err, io.EOF) {
		return resp, fmt.Errorf("read body: %w", err)
	}
	return resp, nil
}
