package probe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/net/http/httpproxy"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

const (
	maxRedirects = 5
	httpBodyCap  = 1 << 20 // bytes counted per response; the excerpt keeps fewer
	tokenCap     = 4096    // bytes of a first response used as a header value
)

// doHTTP makes the step's request, and when Then is set, a second request
// carrying the first response's body as a header (the IMDSv2 token flow).
func doHTTP(ctx context.Context, s wire.Step, rep *wire.Report) error {
	ctx, notes := withNotes(ctx)
	defer notes.fill(rep)
	client, redirectCapped := newHTTPClient(s)
	body, err := request(ctx, client, s.Method, s.Target, s.Headers, bodyOf(s), rep)
	if err != nil || s.Then == nil {
		return capNote(err, *redirectCapped)
	}
	if rep.Status < 200 || rep.Status > 299 {
		return fmt.Errorf("then: not attempted: first response status %d", rep.Status)
	}
	headers := make(map[string]string, len(s.Then.Extra)+1)
	for k, v := range s.Then.Extra {
		headers[k] = v
	}
	headers[s.Then.Header] = strings.TrimSpace(string(body))
	_, err = request(ctx, client, s.Then.Method, s.Then.Target, headers, "", rep)
	if err != nil {
		return fmt.Errorf("then: %w", err)
	}
	return capNote(nil, *redirectCapped)
}

func capNote(err error, capped bool) error {
	if err == nil && capped {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return err
}

// httpDial is the HTTP dialer (the attempt's own, dialerFrom); tests swap
// it for one that refuses anything but loopback, so a regression cannot
// send a packet off the machine.
var httpDial = func(ctx context.Context, network, addr string) (net.Conn, error) {
	return dialerFrom(ctx).DialContext(ctx, network, addr)
}

// newHTTPClient never verifies TLS (lab endpoints use throwaway certificates)
// and reads proxy settings from the environment only when the step asks: an
// agent told to "ignore the proxy" is modelled by UseProxy=false.
func newHTTPClient(s wire.Step) (*http.Client, *bool) {
	tr := &http.Transport{
		DialContext:       legacyDial(httpDial),
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the probe tests reachability, not identity
		DisableKeepAlives: true,
	}
	if s.UseProxy {
		// Read per step, not cached like http.ProxyFromEnvironment.
		pf := httpproxy.FromEnvironment().ProxyFunc()
		tr.Proxy = func(r *http.Request) (*url.URL, error) { return pf(r.URL) }
	}
	capped := new(bool)
	client := &http.Client{
		Transport: tr,
		CheckRedirect: func(_ *http.Request, via []*http.Request) error {
			if !s.Follow {
				return http.ErrUseLastResponse
			}
			if len(via) > maxRedirects {
				*capped = true
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
	return client, capped
}

// request sends one request and records status, byte count and excerpt of
// the response in rep. It returns up to tokenCap bytes of the body.
func request(ctx context.Context, c *http.Client, method, target string, headers map[string]string, body string, rep *wire.Report) ([]byte, error) {
	if method == "" {
		method = http.MethodGet
	}
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("unsupported scheme %q", u.Scheme)
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
	tagRequest(ctx, req)
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	rep.Status = resp.StatusCode
	var head limitedBuffer
	head.max = max(tokenCap, wire.MaxExcerptLen)
	n, err := io.Copy(&head, io.LimitReader(resp.Body, httpBodyCap))
	rep.Bytes += int(n)
	rep.Excerpt = string(head.buf)
	if err != nil && !errors.Is(err, io.EOF) {
		return head.buf, fmt.Errorf("read body: %w", err)
	}
	return head.buf, nil
}

// limitedBuffer keeps the first max bytes written and accepts the rest.
type limitedBuffer struct {
	buf []byte
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
