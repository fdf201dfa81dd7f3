package steps_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/probe"
)

// A starved machine: attempts time out with no answer and no kernel-side
// proof of a drop. Such a timeout never counts toward a PASS: the harness
// tries again, and a leak that shows on a later try is a FAIL; attempts
// that never answer leave the gate INCONCLUSIVE, saying so.
func TestTimedOutAttemptsNeverPass(t *testing.T) {
	first := func(s probe.Step) bool { return !strings.Contains(s.ID, "@try") }
	// The control's tries, by its token: the first times out, the next
	// arrives.
	var mu sync.Mutex
	controlTries := map[string]int{}
	controlTry := func(s probe.Step, count bool) int {
		mu.Lock()
		defer mu.Unlock()
		if count {
			controlTries[s.Headers["X-Gatehouse-Control"]]++
		}
		return controlTries[s.Headers["X-Gatehouse-Control"]]
	}
	tests := []struct {
		name    string
		timeout func(probe.Step) bool // called after deliver, once per step
		deliver func(probe.Step) bool
		want    evidence.Verdict
		reason  string
	}{
		{"the proxy answers on a later try and the leak shows",
			func(s probe.Step) bool { return first(s) && s.Kind == probe.KindProxy },
			func(s probe.Step) bool {
				return s.ID == "positive-control" || (!first(s) && strings.HasPrefix(s.ID, "proxy-rebind"))
			},
			evidence.Fail, "forbidden contact"},
		{"nothing ever answers: no pass for lack of time",
			func(s probe.Step) bool { return s.Kind == probe.KindProxy },
			func(s probe.Step) bool { return s.ID == "positive-control" },
			evidence.Inconclusive, "timed out with no answer"},
		{"a later try answers: blocked, and shown to be",
			func(s probe.Step) bool { return first(s) && s.Kind == probe.KindProxy },
			func(s probe.Step) bool { return s.ID == "positive-control" },
			evidence.Pass, "attempts on record"},
		{"the control times out once, then arrives",
			func(s probe.Step) bool { return s.ID == "positive-control" && controlTry(s, true) == 1 },
			func(s probe.Step) bool { return s.ID == "positive-control" && controlTry(s, false) > 0 },
			evidence.Pass, "positive control reached"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tgt := &fakeTarget{lab: &fakeLab{}, deliver: tt.deliver, timeout: tt.timeout}
			out := runFake(t, tgt, "external-callback")
			if len(out.Results) != 2 {
				t.Fatalf("%d results, want 2", len(out.Results))
			}
			for _, r := range out.Results {
				if r.Verdict != tt.want || !strings.Contains(r.Reason, tt.reason) {
					t.Errorf("%s: %s (%s), want %s saying %q", r.Path, r.Verdict, r.Reason, tt.want, tt.reason)
				}
			}
		})
	}
}
