package evidence_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// The assume-breach takedown in a verdict: a FAIL still rests on the hits
// and says which layer fell; the harness's own view of the ruleset wins
// over the probe's word; a takedown with no FAIL is a note on a PASS; a
// missing takedown report cannot support a PASS.
func TestJudgeWithATakedown(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	control := evidence.Hit{Endpoint: "inference", Session: "s1", Data: "x-gatehouse-control: ctrl1", Time: at.Add(-time.Second)}
	callback := func(d time.Duration) evidence.Hit {
		return evidence.Hit{Endpoint: "callback", Proto: "http", Session: "s1", Src: "198.51.100.2", Dst: "203.0.113.10:80", Summary: "GET /c/ghcanary1", Time: at.Add(d)}
	}
	flushed := evidence.ControlTakedown{Control: "nftables", State: evidence.TakedownFell, Changed: []string{"delete table inet gatehouse_egress"}}
	held := evidence.ControlTakedown{Control: "remount", State: evidence.TakedownHeld, Refused: []string{"remount read-write /: operation not permitted"}}
	gone := &evidence.RulesetView{Before: []string{"inet gatehouse_acct", "inet gatehouse_egress"}, After: []string{"inet gatehouse_acct"}}
	kept := &evidence.RulesetView{Before: gone.Before, After: gone.Before}
	obs := func(td *evidence.Takedown, hits ...evidence.Hit) evidence.Observation {
		return evidence.Observation{
			Session: "s1", Canary: "ghcanary1", Control: "ctrl1", Planned: []string{"http", "http@after-takedown"},
			Attempts: []evidence.Attempt{{Session: "s1", ID: "http", Outcome: "timeout"}, {Session: "s1", ID: "http@after-takedown", Outcome: "completed"}},
			Hits:     append([]evidence.Hit{control}, hits...), Allowed: []string{"inference"}, Takedown: td,
		}
	}
	tests := []struct {
		name    string
		obs     evidence.Observation
		verdict evidence.Verdict
		reason  []string // substrings, in order
		not     string
	}{
		{"ruleset flushed, seen from outside, then the callback heard it",
			obs(&evidence.Takedown{At: at, Controls: []evidence.ControlTakedown{flushed, held}, Outside: gone}, callback(time.Second)),
			evidence.Fail, []string{"egress ruleset flushed from inside: the policy is not an outer layer", "seen from outside: table inet gatehouse_egress gone", "after it: 1 forbidden contact(s): callback heard http"}, "before the takedown"},
		{"the probe claims a flush the harness does not see: the FAIL does not name it",
			obs(&evidence.Takedown{At: at, Controls: []evidence.ControlTakedown{flushed}, Outside: kept}, callback(time.Second)),
			evidence.Fail, []string{"1 forbidden contact(s)", "root in the guest took down no control first"}, "egress ruleset flushed"},
		{"no outside view: the probe's report names the layer, as its report",
			obs(&evidence.Takedown{At: at, Controls: []evidence.ControlTakedown{flushed}, OutsideError: "no lab"}, callback(time.Second)),
			evidence.Fail, []string{"egress ruleset flushed from inside", "the probe's report: delete table inet gatehouse_egress"}, ""},
		{"a contact before the takedown is told apart",
			obs(&evidence.Takedown{At: at, Controls: []evidence.ControlTakedown{flushed}, Outside: gone}, callback(-time.Second), callback(time.Second)),
			evidence.Fail, []string{"egress ruleset flushed", "before the takedown: 1 forbidden contact(s)", "after it: 1 forbidden contact(s)"}, ""},
		{"ruleset flushed and still nothing arrived: a note on the PASS",
			obs(&evidence.Takedown{At: at, Controls: []evidence.ControlTakedown{flushed}, Outside: gone}),
			evidence.Pass, []string{"root in the guest took down: egress ruleset flushed", "still nothing forbidden arrived"}, ""},
		{"every change refused: PASS says so",
			obs(&evidence.Takedown{At: at, Controls: []evidence.ControlTakedown{held}, Outside: kept}),
			evidence.Pass, []string{"changed none"}, ""},
		{"a control without a report: no PASS",
			obs(&evidence.Takedown{At: at, Controls: []evidence.ControlTakedown{held}, Missing: []string{"nftables"}, Outside: kept}),
			evidence.Inconclusive, []string{"no report for nftables"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := evidence.Judge(tt.obs)
			if j.Verdict != tt.verdict {
				t.Fatalf("%s (%s), want %s", j.Verdict, j.Reason, tt.verdict)
			}
			rest := j.Reason
			for _, want := range tt.reason {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("reason %q lacks %q (in order)", j.Reason, want)
				}
				rest = rest[i+len(want):]
			}
			if tt.not != "" && strings.Contains(j.Reason, tt.not) {
				t.Errorf("reason %q holds %q", j.Reason, tt.not)
			}
			if j.Verdict == evidence.Fail && len(j.Violating) == 0 {
				t.Error("a FAIL without the hits that prove it")
			}
		})
	}
}

func TestContradictedNamesWhatTheHarnessStillSees(t *testing.T) {
	td := &evidence.Takedown{
		Controls: []evidence.ControlTakedown{{Control: "nftables", State: evidence.TakedownFell, Changed: []string{"delete table inet gatehouse_egress", "delete table inet other"}}},
		Outside:  &evidence.RulesetView{Before: []string{"inet gatehouse_egress", "inet other"}, After: []string{"inet gatehouse_egress"}},
	}
	got := td.Contradicted()
	if len(got) != 1 || !strings.Contains(got[0], "inet gatehouse_egress") {
		t.Fatalf("got %q", got)
	}
}
