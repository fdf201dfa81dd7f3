package steps_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/probe/wire"
	"github.com/gatehouse-dev/gatehouse/steps"
	"github.com/gatehouse-dev/gatehouse/steps/steptest"
)

// cross-session through the steps, with sessions that send and receive
// for as long as asked and report honest active windows. When the second
// session's probe starts only after the first one's has ended (a slow
// start), nothing crosses, yet the verdict is INCONCLUSIVE, never PASS; on
// time, it PASSes with the overlap it rests on.
func TestCrossSessionNeedsRealOverlap(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the 3 s exchange twice")
	}
	for _, late := range []bool{false, true} {
		fl := &steptest.Lab{}
		tgt := &placeTarget{lab: fl, answer: func(s *placeSession, st wire.Step) wire.Report {
			return wire.Report{Outcome: wire.OutcomeCompleted}
		}}
		tgt.before = func(p wire.Plan) {
			// The second session of a pair is the one that reads queue 1.
			for _, st := range p.Steps {
				if late && st.Kind == wire.KindReceive && strings.HasPrefix(st.Target, "mq:") && strings.HasSuffix(st.Target, "-1") {
					time.Sleep(time.Duration(st.DurationMS)*time.Millisecond + 500*time.Millisecond)
				}
			}
		}
		tgt.timed = true
		for _, r := range runPlaces(t, fl, tgt, steps.SecretProcess{}, "cross-session") {
			switch {
			case late && (r.Verdict != evidence.Inconclusive || !strings.Contains(r.Reason, "the sessions did not run at the same time")):
				t.Errorf("late %s: %s (%s), want INCONCLUSIVE: the sessions did not run at the same time", r.Path, r.Verdict, r.Reason)
			case !late && (r.Verdict != evidence.Pass || r.Timings["overlap_min_ms"] < 500):
				t.Errorf("on time %s: %s (%s, %v), want PASS with the overlap", r.Path, r.Verdict, r.Reason, r.Timings)
			}
		}
	}
}
