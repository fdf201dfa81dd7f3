package probe_test

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/probe"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// runPlan runs steps through probe.Run and reads the output back with
// Decode, so every runner test also checks that honest output decodes.
func runPlan(t *testing.T, timeoutMS int, steps ...wire.Step) map[string]wire.Report {
	t.Helper()
	plan := wire.Plan{Session: "s1", TimeoutMS: timeoutMS, Steps: steps}
	if err := plan.Validate(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := probe.Run(context.Background(), plan, &out); err != nil {
		t.Fatalf("Run: %v", err)
	}
	reps, problems, err := wire.Decode(&out, plan, wire.DefaultLimits())
	if err != nil || len(problems) > 0 {
		t.Fatalf("Decode: %v, problems %q", err, problems)
	}
	byID := map[string]wire.Report{}
	for _, r := range reps {
		byID[r.ID] = r
	}
	if len(byID) != len(steps) {
		t.Fatalf("got %d reports for %d steps", len(byID), len(steps))
	}
	return byID
}

// expect checks a report's outcome and, when non-empty, its excerpt.
func expect(t *testing.T, r wire.Report, outcome, excerpt string) {
	t.Helper()
	if r.Outcome != outcome {
		t.Errorf("%s: outcome %q (error %q), want %q", r.ID, r.Outcome, r.Error, outcome)
	}
	if excerpt != "" && r.Excerpt != excerpt {
		t.Errorf("%s: excerpt %q, want %q", r.ID, r.Excerpt, excerpt)
	}
}

func asExit(err error, target **exec.ExitError) bool { return errors.As(err, target) }
