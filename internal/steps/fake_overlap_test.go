package steps_test

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/steps"
	"github.com/gatehouse-dev/gatehouse/internal/steps/steptest"
	"github.com/gatehouse-dev/gatehouse/targets/fake"
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
		tgt := &fake.Target{Lab: fl, Deliver: onlyControl, Output: exchanging(late)}
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

// exchanging is a probe whose attempts all run at once, the sends and
// receives for as long as asked, and that reports honest active windows.
// With late, the second session of a pair (the one that reads queue 1)
// starts only once the first one's attempts have ended.
func exchanging(late bool) func(wire.Plan, io.Writer) error {
	return func(p wire.Plan, w io.Writer) error {
		longest := 0
		for _, st := range p.Steps {
			if late && st.Kind == wire.KindReceive && strings.HasPrefix(st.Target, "mq:") && strings.HasSuffix(st.Target, "-1") {
				time.Sleep(time.Duration(st.DurationMS)*time.Millisecond + 500*time.Millisecond)
			}
			longest = max(longest, st.DurationMS)
		}
		ran := time.Now()
		time.Sleep(time.Duration(longest) * time.Millisecond)
		enc := json.NewEncoder(w)
		for _, st := range p.Steps {
			start := time.Now()
			rep := wire.Report{ID: st.ID, Kind: st.Kind, Target: st.Target, Outcome: wire.OutcomeCompleted, Start: start}
			switch {
			case st.ID == "positive-control":
				rep.Status = 200
			case st.DurationMS > 0:
				rep.ActiveFrom, rep.ActiveTo = ran, ran.Add(time.Duration(st.DurationMS)*time.Millisecond)
			default:
				rep.ActiveFrom, rep.ActiveTo = start, time.Now()
			}
			if err := enc.Encode(rep); err != nil {
				return err
			}
		}
		return nil
	}
}
