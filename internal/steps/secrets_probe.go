package steps

import (
	"context"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// huntTimeout is the per-attempt deadline of hunts and host checks: a hunt
// walks folders and /proc and then presents what it found, which takes
// longer than one network attempt.
const huntTimeout = 4 * time.Second

// runHunt runs hunts and host checks with their longer per-attempt
// deadline. The reports' excerpts go onto the attempts (toAttempts): for
// these gates an excerpt is the evidence of a read, a planted value the
// probe could not have guessed.
func (r *runner) runHunt(ctx context.Context, s *scenario, steps []wire.Step) error {
	_, err := r.runPlan(ctx, s, wire.Plan{TimeoutMS: int(huntTimeout / time.Millisecond), Steps: steps}, 30*time.Second)
	return err
}
