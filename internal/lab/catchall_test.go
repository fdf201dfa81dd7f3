package lab_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// Every TCP and UDP port of every callback address is recorded, with the
// port the sandbox really aimed at.
func TestCatchAllRecordsAnyPort(t *testing.T) {
	l := upLab(t)
	nw := attach(t, l, "any")
	quic := string([]byte{0xc3, 0, 0, 0, 1, 8}) + "12345678" // long header, Initial, version 1
	tests := []struct {
		network, addr, payload, summary string
	}{
		{"tcp", "192.88.99.10:22", "SSH-2.0-", "tcp port 22"},
		{"tcp", "[3ffe::10]:8443", "", "tcp port 8443"},
		{"tcp", "203.0.113.10:25", "EHLO ", "tcp port 25"},
		{"tcp", "[2001:db8:cafe::10]:31337", "", "tcp port 31337"},
		{"udp", "192.88.99.10:443", quic, "QUIC Initial (version 0x00000001)"},
		{"udp", "[3ffe::10]:123", "", "udp port 123"},
		{"udp", "203.0.113.10:53", "", "udp port 53"},
	}
	for i, tc := range tests {
		t.Run(tc.network+"-"+tc.addr, func(t *testing.T) {
			marker := fmt.Sprintf("catch%02d", i)
			c, err := dial(context.Background(), nw, tc.network, tc.addr)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer c.Close()
			if _, err := c.Write([]byte(tc.payload + marker)); err != nil {
				t.Fatalf("write: %v", err)
			}
			h := waitHit(t, l, "any", func(h evidence.Hit) bool { return strings.Contains(h.Data, marker) })
			if h.Endpoint != "callback" || h.Proto != tc.network || h.Conn {
				t.Errorf("hit %s/%s conn=%v, want callback/%s", h.Endpoint, h.Proto, h.Conn, tc.network)
			}
			if want := netip.MustParseAddrPort(tc.addr).String(); h.Dst != want {
				t.Errorf("hit Dst %q, want the original destination %q", h.Dst, want)
			}
			if !strings.Contains(h.Summary, tc.summary) {
				t.Errorf("summary %q does not say %q", h.Summary, tc.summary)
			}
		})
	}
}

// A client that connects to the HTTPS port and sends garbage never makes a
// request, but its connection is recorded.
func TestGarbageToHTTPSPortIsRecorded(t *testing.T) {
	l := upLab(t)
	nw := attach(t, l, "junk")
	c, err := dial(context.Background(), nw, "tcp", "192.88.99.10:443")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("not-tls garbage-marker\r\n")); err != nil {
		t.Fatal(err)
	}
	h := waitHit(t, l, "junk", func(h evidence.Hit) bool { return strings.Contains(h.Data, "garbage-marker") })
	c.Close()
	if !h.Conn || h.Endpoint != "callback" || h.Dst != "192.88.99.10:443" {
		t.Errorf("hit = %+v, want a connection record of callback on 192.88.99.10:443", h)
	}
	time.Sleep(300 * time.Millisecond)
	for _, h := range l.HitsFor("junk") {
		if !h.Conn {
			t.Errorf("garbage made a request hit: %+v", h)
		}
	}
}

// A TLS client that refuses our certificate (as an intercepting proxy
// would) still leaves its ClientHello's server name on record, on the HTTPS
// port and on any other port.
func TestClientHelloSNIIsRecorded(t *testing.T) {
	l := upLab(t)
	nw := attach(t, l, "sni")
	for _, addr := range []string{"203.0.113.10:443", "[3ffe::10]:443", "192.88.99.10:853"} {
		t.Run(addr, func(t *testing.T) {
			sni := "sni-" + strings.NewReplacer("[", "", "]", "", ":", "-", ".", "-").Replace(addr) + ".example"
			raw, err := dial(context.Background(), nw, "tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			refuse := errors.New("certificate refused")
			c := tls.Client(raw, &tls.Config{ServerName: sni, InsecureSkipVerify: true, //nolint:gosec // we refuse below
				VerifyPeerCertificate: func([][]byte, [][]*x509.Certificate) error { return refuse }})
			_ = c.SetDeadline(time.Now().Add(3 * time.Second))
			_ = c.Handshake() // fails: refused, or no TLS server on the catch-all
			h := waitHit(t, l, "sni", func(h evidence.Hit) bool { return strings.Contains(h.Summary, sni) })
			if h.Endpoint != "callback" || !strings.Contains(h.Summary, `sni="`+sni+`"`) {
				t.Errorf("hit = %+v, want the callback to name the SNI", h)
			}
			if h.Dst != netip.MustParseAddrPort(addr).String() {
				t.Errorf("hit Dst %q, want %s", h.Dst, addr)
			}
		})
	}
	for _, h := range l.HitsFor("sni") {
		if h.Proto == "https" {
			t.Errorf("a refused handshake made a request hit: %+v", h)
		}
	}
}

// One full HTTPS request leaves exactly one connection record and one
// request hit, which Fold counts as one contact.
func TestOneRequestOneContact(t *testing.T) {
	l := upLab(t)
	nw := attach(t, l, "one")
	if err := httpGet("https://192.88.99.10/one", 200)(context.Background(), nw, "one-marker"); err != nil {
		t.Fatal(err)
	}
	waitHit(t, l, "one", func(h evidence.Hit) bool { return h.Proto == "https" })
	hits := l.HitsFor("one")
	if len(hits) != 2 || !hits[0].Conn || hits[1].Conn || hits[0].Src != hits[1].Src {
		t.Fatalf("want a connection record then a request hit from the same source, got %+v", hits)
	}
	if f := evidence.Fold(hits); len(f) != 1 || f[0].Proto != "https" {
		t.Errorf("Fold = %+v, want the request hit alone", f)
	}
}
