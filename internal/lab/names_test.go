package lab_test

import (
	"context"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
)

// ask sends one query to the lab resolver from the session namespace.
func ask(t *testing.T, nw lab.Network, name string, qtype uint16) *dns.Msg {
	t.Helper()
	c, err := dial(context.Background(), nw, "udp", lab.ResolverV4+":53")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	co := &dns.Conn{Conn: c}
	if err := co.WriteMsg(m); err != nil {
		t.Fatal(err)
	}
	r, err := co.ReadMsg()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func firstA(m *dns.Msg) string {
	for _, rr := range m.Answer {
		if a, ok := rr.(*dns.A); ok {
			return a.A.String()
		}
	}
	return ""
}

func TestLabNamesRebindingAndCanaryLabels(t *testing.T) {
	l := upLab(t)
	a, b := attach(t, l, "na"), attach(t, l, "nb")
	l.Track("na", "ghc0123456789abcdef")
	if got := firstA(ask(t, a, lab.InferenceLabName, dns.TypeA)); got != lab.InferenceV4 {
		t.Errorf("%s = %q", lab.InferenceLabName, got)
	}
	if got := firstA(ask(t, a, "api."+lab.InferenceLabName, dns.TypeA)); got != lab.InferenceV4 {
		t.Errorf("wildcard = %q", got)
	}
	// Per asker: a's second answer moves, b's first does not.
	if got := firstA(ask(t, a, lab.RebindLabName, dns.TypeA)); got != lab.InferenceV4 {
		t.Errorf("first rebind answer = %q", got)
	}
	if got := firstA(ask(t, a, lab.RebindLabName, dns.TypeA)); got != lab.CallbackV4 {
		t.Errorf("second rebind answer = %q", got)
	}
	if got := firstA(ask(t, b, lab.RebindLabName, dns.TypeA)); got != lab.InferenceV4 {
		t.Errorf("another session's first answer = %q", got)
	}
	_ = ask(t, a, lab.RebindMetadataLabName, dns.TypeA)
	if got := firstA(ask(t, a, lab.RebindMetadataLabName, dns.TypeA)); got != lab.MetadataV4 {
		t.Errorf("second metadata rebind answer = %q", got)
	}
	// A canary label, upper-cased as a proxy might pass it on, is a leak.
	ask(t, b, "GHC0123456789ABCDEF.x."+lab.InferenceLabName, dns.TypeA)
	h := waitHit(t, l, "na", func(h evidence.Hit) bool {
		return h.Endpoint == "dns-authority" && strings.Contains(strings.ToLower(h.Data), "ghc0123456789abcdef")
	})
	if h.Attribution != "tag" {
		t.Errorf("attribution %q, want tag", h.Attribution)
	}
	// An ordinary name under the lab domain is no authority hit.
	for _, h := range l.Hits() {
		if h.Endpoint == "dns-authority" && strings.Contains(h.Data, "api.") {
			t.Errorf("ordinary name recorded at the authority: %+v", h)
		}
	}
}
