package evidence_test

import (
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

func TestRecheck(t *testing.T) {
	t0 := time.Now()
	pass := func() []evidence.Result {
		return []evidence.Result{{Gate: "g", Session: "s1", Verdict: evidence.Pass, Start: t0, DurationMS: 10}}
	}
	tests := []struct {
		name    string
		hits    []evidence.Hit
		dropped int
		want    evidence.Verdict
	}{
		{"nothing new keeps the pass", []evidence.Hit{{Endpoint: "inference", Session: "s1"}}, 0, evidence.Pass},
		// Late hits are each gate's own business (steps.Outcome.Rejudge): a
		// contact one gate forbids may be another gate's legitimate use.
		{"a late hit is left to the gate's own re-judging", []evidence.Hit{{Endpoint: "engine-socket", Session: "s1", Time: t0.Add(time.Second)}}, 0, evidence.Pass},
		{"another session's hit does not", []evidence.Hit{{Endpoint: "callback", Session: "s2"}}, 0, evidence.Pass},
		{"dropped hits make it inconclusive", nil, 3, evidence.Inconclusive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := pass()
			evidence.Recheck(rs, tt.hits, tt.dropped)
			if rs[0].Verdict != tt.want {
				t.Fatalf("%s (%s), want %s", rs[0].Verdict, rs[0].Reason, tt.want)
			}
		})
	}
	fail := []evidence.Result{{Verdict: evidence.Fail, Session: "s1"}}
	if evidence.Recheck(fail, nil, 5) != 0 || fail[0].Verdict != evidence.Fail {
		t.Error("Recheck changed a FAIL")
	}
}
