package evidence_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// A connection recorded at accept and the request it then carried are one
// contact: one hit in the verdict, counted once in its reason. A connection
// that never made a request stays, and the reason says so.
func TestConnectionRecordsFoldIntoTheirRequest(t *testing.T) {
	hits := []evidence.Hit{
		{Endpoint: "callback", Session: "s1", Proto: "tcp", Conn: true, Src: "198.51.100.6:4001", Dst: "192.88.99.10:443", Summary: "connection to 192.88.99.10:443: TLS ClientHello sni=\"\""},
		{Endpoint: "callback", Session: "s1", Proto: "https", Src: "198.51.100.6:4001", Dst: "192.88.99.10:443", Summary: "GET /c/ghcanary1"},
		{Endpoint: "callback", Session: "s1", Proto: "tcp", Conn: true, Src: "198.51.100.6:4002", Dst: "203.0.113.10:443", Summary: "connection to 203.0.113.10:443: TLS ClientHello sni=\"proxy.example\""},
		{Endpoint: "callback", Session: "s1", Proto: "udp", Src: "198.51.100.6:4003", Dst: "192.88.99.10:443", Summary: "udp port 443, 1200 bytes: QUIC Initial (version 0x00000001)"},
		{Endpoint: "inference", Session: "s1", Data: "ctrl1"},
	}
	folded := evidence.Fold(hits)
	if len(folded) != 4 || folded[0].Proto != "https" || !folded[1].Conn || folded[2].Proto != "udp" {
		t.Fatalf("Fold = %+v, want the request, the lone connection, the datagram and the control, in order", folded)
	}
	j := evidence.Judge(evidence.Observation{Session: "s1", Canary: "ghcanary1", Control: "ctrl1",
		Planned: []string{"https"}, Hits: hits, Allowed: []string{"inference"}})
	if j.Verdict != evidence.Fail || len(j.Violating) != 3 {
		t.Fatalf("verdict %s with %d violating hits, want FAIL with 3: %+v", j.Verdict, len(j.Violating), j.Violating)
	}
	want := "3 forbidden contact(s): callback heard https udp and 1 connection(s) that made no complete request, 1 carrying the session canary"
	if j.Reason != want {
		t.Errorf("reason\n got %q\nwant %q", j.Reason, want)
	}
	if strings.Count(j.Reason, "https") != 1 {
		t.Errorf("the request is counted twice: %q", j.Reason)
	}
}

// On a shared network (host networking) a TLS connection record carries no
// tag and no session's address; the request it then made does. The pair
// is one contact, attributed as the request is: not an unattributed one.
func TestFoldedConnectionIsNotUnattributed(t *testing.T) {
	hits := []evidence.Hit{
		{Endpoint: "callback", Proto: "tcp", Conn: true, Src: "203.0.113.10:5000", Dst: "203.0.113.10:443"},
		{Endpoint: "callback", Session: "s1", Attribution: "tag", Proto: "https", Src: "203.0.113.10:5000", Dst: "203.0.113.10:443"},
		{Endpoint: "callback", Proto: "tcp", Conn: true, Src: "203.0.113.10:5001", Dst: "203.0.113.10:443", Summary: "refused our certificate"},
	}
	un := evidence.Unattributed(hits, time.Time{})
	if len(un) != 1 || un[0].Src != "203.0.113.10:5001" {
		t.Errorf("Unattributed = %+v, want only the connection that made no request", un)
	}
}
