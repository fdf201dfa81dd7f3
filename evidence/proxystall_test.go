package evidence

import (
	"strings"
	"testing"
)

// A proxy attempt that timed out is not proof of an attempt (a proxy
// answers what it blocks); every other outcome of it, and a timeout of
// any other kind, keeps its meaning.
func TestProxyTimeoutIsNoAttempt(t *testing.T) {
	tests := []struct {
		a       Attempt
		made    bool
		stalled bool
	}{
		{Attempt{Session: "s1", ID: "proxy-rebind", Kind: "proxy", Outcome: "timeout"}, false, true},
		{Attempt{Session: "s1", ID: "proxy-rebind", Kind: "proxy", Outcome: "denied"}, true, false},
		{Attempt{Session: "s1", ID: "proxy-rebind", Kind: "proxy", Outcome: "completed"}, true, false},
		{Attempt{Session: "s1", ID: "proxy-rebind", Kind: "proxy", Outcome: "no-proxy"}, true, false},
		{Attempt{Session: "s1", ID: "tcp-callback", Kind: "tcp", Outcome: "timeout"}, true, false},
		// A slow gateway error says the proxy went onward and its own
		// lookup or connect failed (issue 22, C3): on a loaded machine,
		// the lab's resolver answered late. No refusal, no proof.
		{Attempt{Session: "s1", ID: "proxy-rebind", Kind: "proxy", Outcome: "denied", Status: 502, DurationMS: 2500, Error: "proxy refused: CONNECT answered 502"}, false, true},
		{Attempt{Session: "s1", ID: "proxy-rebind", Kind: "proxy", Outcome: "denied", Status: 503, DurationMS: 1000, Error: "proxy refused: CONNECT answered 503"}, false, true},
		{Attempt{Session: "s1", ID: "proxy-rebind", Kind: "proxy", Outcome: "completed", Status: 504, DurationMS: 5000}, false, true},
		{Attempt{Session: "s1", ID: "proxy-socks", Kind: "proxy", Outcome: "denied", DurationMS: 4000, Error: "proxy refused: socks5 reply 1"}, false, true},
		{Attempt{Session: "s1", ID: "proxy-socks", Kind: "proxy", Outcome: "denied", DurationMS: 4000, Error: "proxy refused: socks5 reply 4"}, false, true},
		// A fast one is the proxy's own decision: some answer denials
		// with 503, minimal SOCKS5 servers with reply 1.
		{Attempt{Session: "s1", ID: "proxy-rebind", Kind: "proxy", Outcome: "denied", Status: 503, DurationMS: 12, Error: "proxy refused: CONNECT answered 503"}, true, false},
		{Attempt{Session: "s1", ID: "proxy-socks", Kind: "proxy", Outcome: "denied", DurationMS: 3, Error: "proxy refused: socks5 reply 1"}, true, false},
		// A refusal stays a refusal however long it took: 403, 407,
		// SOCKS5 reply 2 (not allowed by ruleset), 5 (refused by the target).
		{Attempt{Session: "s1", ID: "proxy-rebind", Kind: "proxy", Outcome: "denied", Status: 403, DurationMS: 3000, Error: "proxy refused: CONNECT answered 403"}, true, false},
		{Attempt{Session: "s1", ID: "proxy-rebind", Kind: "proxy", Outcome: "denied", Status: 407, DurationMS: 3000}, true, false},
		{Attempt{Session: "s1", ID: "proxy-socks", Kind: "proxy", Outcome: "denied", DurationMS: 3000, Error: "proxy refused: socks5 reply 2"}, true, false},
		{Attempt{Session: "s1", ID: "proxy-socks", Kind: "proxy", Outcome: "denied", DurationMS: 3000, Error: "proxy refused: socks5 reply 5"}, true, false},
		{Attempt{Session: "s1", ID: "http-callback", Kind: "http", Outcome: "completed", Status: 502, DurationMS: 3000}, true, false},
	}
	for _, tt := range tests {
		if got := AttemptMade(tt.a); got != tt.made {
			t.Errorf("AttemptMade(%s %s %d %q) = %v, want %v", tt.a.Kind, tt.a.Outcome, tt.a.Status, tt.a.Error, got, tt.made)
		}
		if got := ProxyStalled("s1", tt.a.ID, []Attempt{tt.a}); got != tt.stalled {
			t.Errorf("ProxyStalled(%s %s %d %q) = %v, want %v", tt.a.Kind, tt.a.Outcome, tt.a.Status, tt.a.Error, got, tt.stalled)
		}
	}
	// One try that went through settles the attempt, whatever came before;
	// another session's reports and no report at all stall nothing.
	tries := []Attempt{
		{Session: "s1", ID: "proxy-rebind", Kind: "proxy", Outcome: "timeout"},
		{Session: "s1", ID: "proxy-rebind", Kind: "proxy", Outcome: "completed"},
		{Session: "s2", ID: "proxy-rebind", Kind: "proxy", Outcome: "timeout"},
	}
	if ProxyStalled("s1", "proxy-rebind", tries) || !ProxyStalled("s2", "proxy-rebind", tries) || ProxyStalled("s3", "proxy-rebind", tries) {
		t.Errorf("ProxyStalled over tries: s1 %v (want false), s2 %v (want true), s3 %v (want false)",
			ProxyStalled("s1", "proxy-rebind", tries), ProxyStalled("s2", "proxy-rebind", tries), ProxyStalled("s3", "proxy-rebind", tries))
	}
	j := Judge(Observation{Session: "s1", Control: "c", Planned: []string{"proxy-rebind"}, Attempts: tries[:1],
		Allowed: []string{"inference"}, Hits: []Hit{{Endpoint: "inference", Session: "s1", Data: "c"}}})
	if j.Verdict != Inconclusive || !strings.Contains(j.Reason, "neither answered nor refused proxy-rebind") {
		t.Errorf("a stalled proxy attempt: %s (%s), want INCONCLUSIVE", j.Verdict, j.Reason)
	}
}
