package steps

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// huntTimeout is the per-attempt deadline of hunts and host checks: a hunt
// walks folders and /proc and then presents what it found, which takes
// longer than one network attempt.
const huntTimeout = 4 * time.Second

// runHunt runs hunts and host checks with their longer per-attempt
// deadline. The reports' excerpts go onto the attempts (toAttempts): for
// these gates an excerpt is the evidence of a read, a planted value the
// probe could not have guessed. Attempts cut short by the machine (out of
// time, or a file attempt short of memory or I/O) are tried once more
// with twice the time: on a loaded machine they are no proof of anything
// (evidence.AttemptOnRecord), and one still cut leaves the gate
// INCONCLUSIVE, never a PASS (issue 22).
func (r *runner) runHunt(ctx context.Context, s *scenario, steps []wire.Step) error {
	if _, err := r.runPlan(ctx, s, wire.Plan{TimeoutMS: int(huntTimeout / time.Millisecond), Steps: steps}, 30*time.Second); err != nil {
		return err
	}
	again := cutShort(s.session, steps, s.attempts)
	if len(again) == 0 {
		return nil
	}
	ids := make([]string, len(again))
	for i, st := range again {
		ids[i] = st.ID
	}
	s.findings = append(s.findings, fmt.Sprintf("%d attempt(s) were cut short (out of time, or the machine short of memory or I/O), tried again with %s each: %s",
		len(again), 2*huntTimeout, strings.Join(ids, ", ")))
	if _, err := r.runPlan(ctx, s, wire.Plan{TimeoutMS: int(2 * huntTimeout / time.Millisecond), Steps: again}, 45*time.Second); err != nil {
		if ctx.Err() != nil {
			return err
		}
		// The first run's reports stand; what the retry did not bring
		// stays off the record, and the gate INCONCLUSIVE through it.
		s.findings = append(s.findings, "the retry of the attempts cut short failed: "+err.Error())
	}
	return nil
}

// cutShort returns the steps none of whose reports is on record and whose
// last report says the attempt was cut short rather than answered (a
// search that stopped at its own bound is not tried again: it would stop
// there again).
func cutShort(session string, steps []wire.Step, attempts []evidence.Attempt) []wire.Step {
	last := map[string]evidence.Attempt{}
	on := map[string]bool{}
	for _, a := range attempts {
		if a.Session != session {
			continue
		}
		last[a.ID] = a
		on[a.ID] = on[a.ID] || evidence.AttemptOnRecord(a)
	}
	var out []wire.Step
	for _, st := range steps {
		a, ok := last[st.ID]
		if !ok || on[st.ID] {
			continue
		}
		if a.Outcome == wire.OutcomeTimeout || evidence.FileAttemptCut(a) {
			out = append(out, st)
		}
	}
	return out
}
