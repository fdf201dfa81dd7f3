package evidence_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// An attempt settled early whose packet reached the lab afterwards cannot
// support a PASS (issue 22, S1); a hit it carried still FAILs.
func TestSettledThenArrivedIsNoPass(t *testing.T) {
	o := evidence.Observation{
		Session: "s1", Control: "c", Planned: []string{"tcp-callback"},
		Attempts:       []evidence.Attempt{{Session: "s1", ID: "tcp-callback", Kind: "tcp", Outcome: "timeout"}},
		Allowed:        []string{"inference"},
		Hits:           []evidence.Hit{{Endpoint: "inference", Session: "s1", Data: "c"}},
		SettledArrived: []string{"tcp-callback (tcp 203.0.113.10:9000)"},
	}
	if j := evidence.Judge(o); j.Verdict != evidence.Inconclusive || !strings.Contains(j.Reason, "tcp-callback (tcp 203.0.113.10:9000)") {
		t.Errorf("settled then arrived: %s (%s), want INCONCLUSIVE naming it", j.Verdict, j.Reason)
	}
	o.Hits = append(o.Hits, evidence.Hit{Endpoint: "callback", Session: "s1", Summary: "tcp connect"})
	if j := evidence.Judge(o); j.Verdict != evidence.Fail {
		t.Errorf("with a callback hit: %s (%s), want FAIL", j.Verdict, j.Reason)
	}
	o.Hits, o.SettledArrived = o.Hits[:1], nil
	if j := evidence.Judge(o); j.Verdict != evidence.Pass {
		t.Errorf("nothing arrived after the settle: %s (%s), want PASS", j.Verdict, j.Reason)
	}
}
