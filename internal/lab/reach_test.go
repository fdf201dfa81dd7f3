package lab_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
)

type attempt func(ctx context.Context, nw lab.Network, marker string) error

func httpGet(url string, wantStatus int) attempt {
	return func(ctx context.Context, nw lab.Network, marker string) error {
		sep := "?"
		if strings.Contains(url, "?") {
			sep = "&"
		}
		resp, err := client(nw).Get(url + sep + "m=" + marker)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != wantStatus {
			return fmt.Errorf("status %d, want %d", resp.StatusCode, wantStatus)
		}
		return nil
	}
}

// stream sends the marker over TCP or UDP and expects the "ok" reply.
func stream(network, addr string) attempt {
	return func(ctx context.Context, nw lab.Network, marker string) error {
		c, err := dial(ctx, nw, network, addr)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		if _, err := c.Write([]byte(marker)); err != nil {
			return err
		}
		buf := make([]byte, 16)
		n, err := c.Read(buf)
		if err != nil {
			return err
		}
		if string(buf[:n]) != "ok\n" {
			return fmt.Errorf("reply %q", buf[:n])
		}
		return nil
	}
}

// ping sends an echo request from an unprivileged-style datagram ICMP
// socket, which only works because Attach widened ping_group_range.
func ping(v6 bool, dst string) attempt {
	return func(ctx context.Context, nw lab.Network, marker string) error {
		network, typ, proto := "udp4", icmp.Type(ipv4.ICMPTypeEcho), 1
		if v6 {
			network, typ, proto = "udp6", ipv6.ICMPTypeEchoRequest, 58
		}
		var pc *icmp.PacketConn
		if err := lab.InNetns(nw.NetnsPath, func() (err error) {
			pc, err = icmp.ListenPacket(network, "")
			return err
		}); err != nil {
			return err
		}
		defer pc.Close()
		msg, err := (&icmp.Message{Type: typ, Body: &icmp.Echo{ID: 1, Seq: 1, Data: []byte(marker)}}).Marshal(nil)
		if err != nil {
			return err
		}
		if _, err := pc.WriteTo(msg, &net.UDPAddr{IP: net.ParseIP(dst)}); err != nil {
			return err
		}
		_ = pc.SetReadDeadline(time.Now().Add(3 * time.Second))
		buf := make([]byte, 1500)
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			return fmt.Errorf("no echo reply: %w", err)
		}
		m, err := icmp.ParseMessage(proto, buf[:n])
		if err != nil {
			return err
		}
		if e, ok := m.Body.(*icmp.Echo); !ok || !bytes.Equal(e.Data, []byte(marker)) {
			return fmt.Errorf("unexpected reply %+v", m)
		}
		return nil
	}
}

func TestSessionReachesEveryEndpoint(t *testing.T) {
	l := upLab(t)
	nw := attach(t, l, "s1")
	tests := []struct {
		name     string
		do       attempt
		endpoint string
		proto    string
		served   bool
	}{
		{"callback http v4", httpGet("http://203.0.113.10/x", 200), "callback", "http", false},
		{"callback http v6", httpGet("http://[2001:db8:cafe::10]/x", 200), "callback", "http", false},
		{"callback https v4", httpGet("https://203.0.113.10/x", 200), "callback", "https", false},
		{"callback https v6", httpGet("https://[2001:db8:cafe::10]/x", 200), "callback", "https", false},
		{"callback tcp v4", stream("tcp", "203.0.113.10:9000"), "callback", "tcp", false},
		{"callback tcp v6", stream("tcp", "[2001:db8:cafe::10]:9000"), "callback", "tcp", false},
		{"callback udp v4", stream("udp", "203.0.113.10:9001"), "callback", "udp", false},
		{"callback udp v6", stream("udp", "[2001:db8:cafe::10]:9001"), "callback", "udp", false},
		{"callback icmp", ping(false, "203.0.113.10"), "callback", "icmp", false},
		{"callback icmp6", ping(true, "2001:db8:cafe::10"), "callback", "icmp6", false},
		{"public callback http v4", httpGet("http://192.88.99.10/x", 200), "callback", "http", false},
		{"public callback https v6", httpGet("https://[3ffe::10]/x", 200), "callback", "https", false},
		{"public callback tcp v6", stream("tcp", "[3ffe::10]:9000"), "callback", "tcp", false},
		{"public callback udp v4", stream("udp", "192.88.99.10:9001"), "callback", "udp", false},
		{"public callback icmp", ping(false, "192.88.99.10"), "callback", "icmp", false},
		{"public callback icmp6", ping(true, "3ffe::10"), "callback", "icmp6", false},
		{"inference", httpGet("http://203.0.113.100/v1/complete", 200), "inference", "http", true},
		{"redirect to lab", httpGet("http://203.0.113.100/redirect?to=http://2852039166/latest/", 302), "redirect", "http", true},
		{"redirect outside refused", httpGet("http://203.0.113.100/redirect?to=http://192.0.2.1/", 400), "redirect", "http", false},
		{"aws metadata v6", httpGet("http://[fd00:ec2::254]/latest/meta-data/", 200), "metadata-aws", "http", true},
		{"alibaba metadata", httpGet("http://100.100.100.200/latest/meta-data/ram/security-credentials/gatehouse-role", 200), "metadata-other", "http", true},
		{"unknown metadata path", httpGet("http://169.254.169.254/openstack/", 404), "metadata-other", "http", false},
		{"wireserver", httpGet("http://168.63.129.16/?comp=versions", 200), "wireserver", "http", true},
		{"intake without a token", httpGet("http://203.0.113.110/v1/tenants/t/runs/r/reports/p", 401), "intake", "http", false},
		{"intake https without a token", httpGet("https://203.0.113.110/v1/tenants/t/runs/r/reports/p", 401), "intake", "https", false},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			marker := fmt.Sprintf("mk%02d-%s", i, strings.ReplaceAll(tc.name, " ", "-"))
			if err := tc.do(context.Background(), nw, marker); err != nil {
				t.Fatalf("attempt from session failed: %v", err)
			}
			// The request's hit, not the connection record made at accept.
			h := waitHit(t, l, "s1", func(h evidence.Hit) bool { return !h.Conn && strings.Contains(h.Data, marker) })
			if h.Endpoint != tc.endpoint || h.Proto != tc.proto || h.Served != tc.served {
				t.Errorf("hit = %s/%s served=%v, want %s/%s served=%v", h.Endpoint, h.Proto, h.Served, tc.endpoint, tc.proto, tc.served)
			}
			if !strings.HasPrefix(h.Src, nw.IPv4) && !strings.Contains(h.Src, nw.IPv6) {
				t.Errorf("hit source %q is not the session's address (%s, %s)", h.Src, nw.IPv4, nw.IPv6)
			}
		})
	}
}

func TestInferenceAnswersCompletion(t *testing.T) {
	l := upLab(t)
	nw := attach(t, l, "s1")
	resp, err := client(nw).Post("http://203.0.113.100/v1/complete", "application/json", strings.NewReader(`{"prompt":"hi"}`))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"text": "ok"`) && !strings.Contains(string(body), `"text":"ok"`) {
		t.Fatalf("got %d %s", resp.StatusCode, body)
	}
	h := waitHit(t, l, "s1", func(h evidence.Hit) bool { return h.Endpoint == "inference" })
	if !strings.Contains(h.Data, `{"prompt":"hi"}`) || !strings.HasPrefix(h.Summary, "POST /v1/complete") {
		t.Errorf("hit does not carry the request: %+v", h)
	}
}
