package steps

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/pressure"
)

// TestStarved: a plan that ran out of time while tasks waited for a CPU a
// quarter of it or more says the machine was too loaded, with the figures;
// any other error, or a quiet machine, is left as it was.
func TestStarved(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 18, 0, 0, 0, time.UTC)
	deadline := fmt.Errorf("exec node: %w", context.DeadlineExceeded)
	other := errors.New("exec node: no such file")
	for _, tc := range []struct {
		name  string
		err   error
		stall time.Duration
		want  string // "" = unchanged
	}{
		{"no error", nil, time.Minute, ""},
		{"another error", other, time.Minute, ""},
		{"timed out, quiet machine", deadline, 10 * time.Second, ""},
		{"timed out, starved", deadline, 90 * time.Second, "the machine was too loaded to judge: tasks waited for a CPU, I/O or memory 1m30s of the 2m0s the plan ran"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := starved(tc.err, pressure.Reading(time.Hour, t0), pressure.Reading(time.Hour+tc.stall, t0.Add(2*time.Minute)), 2*time.Minute)
			switch {
			case tc.want == "" && got != tc.err:
				t.Errorf("starved = %v, want it unchanged (%v)", got, tc.err)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want) || !errors.Is(got, context.DeadlineExceeded)):
				t.Errorf("starved = %v, want %q wrapping the deadline", got, tc.want)
			}
		})
	}
}
