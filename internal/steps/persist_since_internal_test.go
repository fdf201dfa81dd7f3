package steps

import (
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// TestChangedSince: the later search reads what changed after the earlier
// of the harness's send and the sandbox's own start, less the margin; a
// sandbox reporting a later (or no) start cannot move it forward.
func TestChangedSince(t *testing.T) {
	sent := time.Date(2026, 12, 2, 18, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		starts []time.Time
		want   time.Time
	}{
		{"no reports", nil, sent.Add(-sinceMargin)},
		{"no start", []time.Time{{}}, sent.Add(-sinceMargin)},
		{"sandbox clock behind", []time.Time{sent.Add(-time.Hour), sent.Add(time.Second)}, sent.Add(-time.Hour - sinceMargin)},
		{"sandbox clock ahead or lying", []time.Time{sent.Add(time.Hour)}, sent.Add(-sinceMargin)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reps []wire.Report
			for _, s := range tc.starts {
				reps = append(reps, wire.Report{Start: s})
			}
			if got := changedSince(sent, reps); !got.Equal(tc.want) {
				t.Errorf("changedSince = %v, want %v", got, tc.want)
			}
		})
	}
}
