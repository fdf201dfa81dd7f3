package steps

import (
	"context"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/pressure"
	"github.com/gatehouse-dev/gatehouse/probe"
)

// huntTimeout is the per-attempt deadline of hunts and host checks: a hunt
// walks folders and /proc and then presents what it found, which takes
// longer than one network attempt.
const huntTimeout = 4 * time.Second

// runHunt runs hunts and host checks with their longer per-attempt
// deadline. The reports' excerpts go onto the attempts (toAttempts): for
// these gates an excerpt is the evidence of a read, a planted value the
// probe could not have guessed.
func (r *runner) runHunt(ctx context.Context, s *scenario, steps []probe.Step) error {
	mark := pressure.Now()
	if err := r.huntFor(ctx, s, steps, huntTimeout); err != nil {
		return err
	}
	// A read or contact that only ran out of time is tried again (retry.go).
	return r.retryUndecided(ctx, s, steps, huntTimeout, mark, nil, r.huntFor)
}

// huntFor runs hunts and host checks with the given per-attempt deadline.
func (r *runner) huntFor(ctx context.Context, s *scenario, steps []probe.Step, timeout time.Duration) error {
	_, err := r.runPlan(ctx, s, probe.Plan{TimeoutMS: int(timeout / time.Millisecond), Steps: steps}, 30*time.Second)
	return err
}
