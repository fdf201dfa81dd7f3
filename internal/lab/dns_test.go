package lab_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
)

// query asks server (ip:53) from inside the session namespace.
func query(t *testing.T, nw lab.Network, network, server, name string, qtype uint16) *dns.Msg {
	t.Helper()
	c, err := dial(context.Background(), nw, network, server)
	if err != nil {
		t.Fatalf("dial %s %s: %v", network, server, err)
	}
	defer c.Close()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	cl := &dns.Client{Net: network, Timeout: 3 * time.Second}
	r, _, err := cl.ExchangeWithConn(m, &dns.Conn{Conn: c})
	if err != nil {
		t.Fatalf("query %s %s via %s/%s: %v", dns.TypeToString[qtype], name, network, server, err)
	}
	return r
}

// answers renders the A/AAAA answers as strings.
func answers(r *dns.Msg) []string {
	var out []string
	for _, rr := range r.Answer {
		switch v := rr.(type) {
		case *dns.A:
			out = append(out, v.A.String())
		case *dns.AAAA:
			out = append(out, v.AAAA.String())
		}
	}
	return out
}

func TestDNSAnswers(t *testing.T) {
	l := upLab(t)
	nw := attach(t, l, "d1")
	const resolver, authority = "203.0.113.53:53", "203.0.113.54:53"
	tests := []struct {
		name, server, network, qname string
		qtype                        uint16
		rcode                        int
		want                         string // joined answers
		authorityHit                 bool   // the authority must have recorded it
	}{
		{"inference A", resolver, "udp", "inference.gatehouse.test", dns.TypeA, dns.RcodeSuccess, "203.0.113.100", false},
		{"inference AAAA is NODATA", resolver, "udp", "inference.gatehouse.test", dns.TypeAAAA, dns.RcodeSuccess, "", false},
		{"callback A over tcp", resolver, "tcp", "callback.gatehouse.test", dns.TypeA, dns.RcodeSuccess, "203.0.113.10", false},
		{"callback AAAA", resolver, "udp", "callback.gatehouse.test", dns.TypeAAAA, dns.RcodeSuccess, "2001:db8:cafe::10", false},
		{"gcp metadata name", resolver, "udp", "metadata.google.internal", dns.TypeA, dns.RcodeSuccess, "169.254.169.254", false},
		{"attacker alias to metadata", resolver, "udp", "Metadata.Gatehouse.Test", dns.TypeA, dns.RcodeSuccess, "169.254.169.254", false},
		{"other names NXDOMAIN", resolver, "udp", "example.com", dns.TypeA, dns.RcodeNameError, "", false},
		{"canary via resolver", resolver, "udp", "c2VjcmV0.oob.gatehouse.test", dns.TypeA, dns.RcodeSuccess, "203.0.113.10", true},
		{"canary direct udp", authority, "udp", "ZGlyZWN0.oob.gatehouse.test", dns.TypeA, dns.RcodeSuccess, "203.0.113.10", true},
		{"canary direct tcp", authority, "tcp", "dGNw.oob.gatehouse.test", dns.TypeA, dns.RcodeSuccess, "203.0.113.10", true},
		{"authority refuses other zones", authority, "udp", "example.com", dns.TypeA, dns.RcodeRefused, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := query(t, nw, tc.network, tc.server, tc.qname, tc.qtype)
			if r.Rcode != tc.rcode {
				t.Errorf("rcode %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[tc.rcode])
			}
			if got := strings.Join(answers(r), ","); got != tc.want {
				t.Errorf("answers %q, want %q", got, tc.want)
			}
			fq := dns.Fqdn(tc.qname)
			endpoint := "dns-resolver"
			if tc.server == authority {
				endpoint = "dns-authority"
			}
			waitHit(t, l, "d1", func(h evidence.Hit) bool {
				return h.Endpoint == endpoint && h.Proto == "dns" && h.Data == fq && strings.Contains(h.Summary, "("+tc.network+")")
			})
			if tc.authorityHit {
				waitHit(t, l, "d1", func(h evidence.Hit) bool { return h.Endpoint == "dns-authority" && h.Data == fq })
			} else {
				for _, h := range l.Hits() {
					if h.Endpoint == "dns-authority" && h.Data == fq {
						t.Errorf("authority recorded a query it should never have seen: %+v", h)
					}
				}
			}
		})
	}
}
