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

// A timed-out direct attempt is proven by the opening packets of its own
// flow, not by a sibling that fed the same destination's counter (issue
// 22, C4): a probe starved before its SYN, or a redirect whose second hop
// never left, proves nothing.
func TestOwnFlowProvesATimeout(t *testing.T) {
	base := func() evidence.Observation {
		return evidence.Observation{
			Session: "s1", Control: "c", Planned: []string{"tcp-callback", "udp-callback"},
			Attempts: []evidence.Attempt{
				{Session: "s1", ID: "tcp-callback", Kind: "tcp", Outcome: "timeout"},
				{Session: "s1", ID: "udp-callback", Kind: "udp", Outcome: "timeout"},
			},
			Allowed: []string{"inference"},
			Hits:    []evidence.Hit{{Endpoint: "inference", Session: "s1", Data: "c"}},
			Emitted: map[string]uint64{"callback4": 3},
			Dests:   map[string]string{"tcp-callback": "callback4", "udp-callback": "callback4"},
			FlowOf:  map[string]string{"tcp-callback": "tcp 203.0.113.10:80", "udp-callback": "udp 203.0.113.10:53"},
		}
	}
	o := base()
	o.FlowEmitted = map[string]uint64{"tcp-callback": 0, "udp-callback": 3}
	if j := evidence.Judge(o); j.Verdict != evidence.Inconclusive || !strings.Contains(j.Reason, "tcp-callback (the probe says timeout, the kernel counted no opening packet of its own flow tcp 203.0.113.10:80") {
		t.Errorf("a timeout whose own flow sent nothing: %s (%s), want INCONCLUSIVE naming it", j.Verdict, j.Reason)
	}
	o = base()
	o.FlowEmitted = map[string]uint64{"tcp-callback": 1, "udp-callback": 2}
	if j := evidence.Judge(o); j.Verdict != evidence.Pass {
		t.Errorf("each flow sent: %s (%s), want PASS", j.Verdict, j.Reason)
	}
	// A refusal is the kernel's or the peer's answer: not judged by it.
	o = base()
	o.Attempts[0].Outcome = "refused"
	o.FlowEmitted = map[string]uint64{"tcp-callback": 0, "udp-callback": 2}
	if j := evidence.Judge(o); j.Verdict != evidence.Pass {
		t.Errorf("a refused attempt: %s (%s), want PASS", j.Verdict, j.Reason)
	}
}
