package lab

import (
	"net/netip"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// A hit is attributed by its in-band tag first, by source address second,
// and, with neither, to the only session alive; otherwise to nobody.
func TestAttribution(t *testing.T) {
	newLab := func() *Lab {
		return &Lab{hits: newHitLog(0, nil), sessions: map[string]*attachment{}, bySrc: map[netip.Addr]string{},
			byTag: map[string]string{}, alive: map[string]bool{}}
	}
	const tagA, tagB = "ghc0123456789abcdef", "ghcfedcba9876543210"
	tests := []struct {
		name        string
		alive       []string
		hit         evidence.Hit
		from        string
		session, by string
	}{
		{"tag in a header wins over the address", []string{"s1", "s2"},
			evidence.Hit{Endpoint: "metadata-aws", Data: "GET / HTTP/1.1\r\nX-Gatehouse-Session: " + tagB + "\r\n"}, "198.51.100.6:4000", "s2", "tag"},
		{"tag in an upper-cased DNS name", []string{"s1", "s2"},
			evidence.Hit{Endpoint: "dns-authority", Summary: "A " + "GHC0123456789ABCDEF.o.oob.gatehouse.test."}, "", "s1", "tag"},
		{"no tag: the source address", []string{"s1", "s2"},
			evidence.Hit{Endpoint: "metadata-aws", Summary: "GET /latest/meta-data/"}, "198.51.100.6:4000", "s1", "address"},
		{"no tag, unknown address, one session alive", []string{"s2"},
			evidence.Hit{Endpoint: "metadata-aws", Summary: "GET /latest/meta-data/"}, "203.0.113.1:4000", "s2", "only-live-session"},
		{"no tag, unknown address, two alive: nobody", []string{"s1", "s2"},
			evidence.Hit{Endpoint: "metadata-aws", Summary: "GET /latest/meta-data/"}, "203.0.113.1:4000", "", ""},
		{"an unknown tag-shaped value is no tag", []string{"s1", "s2"},
			evidence.Hit{Endpoint: "callback", Summary: "GET /c/ghc1111111111111111"}, "203.0.113.1:4000", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLab()
			l.Track("s1", tagA)
			l.Track("s2", tagB)
			l.bySrc[netip.MustParseAddr("198.51.100.6")] = "s1"
			for _, s := range []string{"s1", "s2"} {
				if !contains(tt.alive, s) {
					l.Untrack(s)
				}
			}
			got := l.record(tt.hit, tt.from)
			if got.Session != tt.session || got.Attribution != tt.by {
				t.Fatalf("attributed to %q by %q, want %q by %q", got.Session, got.Attribution, tt.session, tt.by)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
