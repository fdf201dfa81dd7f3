package lab

import (
	"context"
	"fmt"
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

// A packet that reaches the lab after its session was detached (a late
// SYN, a sniff that took its time on a loaded machine) is still that
// session's: its address stays mapped until another session reuses it,
// rather than the hit going to whichever other session is the only one
// alive (issue 22, C8).
func TestLateHitAfterDetachKeepsItsSession(t *testing.T) {
	l := &Lab{hits: newHitLog(0, nil), sessions: map[string]*attachment{}, bySrc: map[netip.Addr]string{},
		byTag: map[string]string{}, alive: map[string]bool{}}
	a1, err := l.reserve("s1")
	if err != nil {
		t.Fatal(err)
	}
	l.Track("s1")
	if _, err := l.reserve("s2"); err != nil {
		t.Fatal(err)
	}
	l.Track("s2")
	if err := l.detach(context.Background(), "s1"); err != nil {
		t.Fatal(err)
	}
	l.Untrack("s1")
	for _, from := range []string{a1.v4.String() + ":40000", "[" + a1.v6.String() + "]:40000"} {
		got := l.record(evidence.Hit{Endpoint: "callback", Summary: "tcp connect"}, from)
		if got.Session != "s1" || got.Attribution != "address" {
			t.Errorf("a late hit from %s: %q by %q, want s1 by address", from, got.Session, got.Attribution)
		}
	}
	// Once another session holds the address, it is that one's.
	for i := 3; ; i++ {
		a, err := l.reserve(fmt.Sprintf("s%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if a.v4 == a1.v4 {
			got := l.record(evidence.Hit{Endpoint: "callback"}, a1.v4.String()+":40000")
			if want := fmt.Sprintf("s%d", i); got.Session != want {
				t.Errorf("after reuse: %q, want %s", got.Session, want)
			}
			break
		}
		if err := l.detach(context.Background(), fmt.Sprintf("s%d", i)); err != nil {
			t.Fatal(err)
		}
		if i > 2*maxSessions {
			t.Fatal("the address was never reused")
		}
	}
}
