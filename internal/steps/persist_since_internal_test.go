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

// A backward step of the wall clock between the earlier session's writes
// and the later's search (a VM resumed from a snapshot: seen here) makes
// files carry wall times before the harness's send; the search moves its
// line back by the step, or it would skip them (issue 22, S6). A forward
// step, or none, leaves it.
func TestSteppedBack(t *testing.T) {
	sent := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	since := sent.Add(-sinceMargin)
	for _, tc := range []struct {
		name    string
		now     time.Time
		elapsed time.Duration
		want    time.Time
	}{
		{"no step", sent.Add(3 * time.Second), 3 * time.Second, since},
		{"a forward step", sent.Add(10 * time.Second), 3 * time.Second, since},
		{"a backward step of 7 s", sent.Add(-4 * time.Second), 3 * time.Second, since.Add(-7 * time.Second)},
		{"a backward step inside the margin still moves it", sent.Add(2 * time.Second), 3 * time.Second, since.Add(-time.Second)},
		{"slewing by microseconds is no step", sent.Add(3*time.Second - 50*time.Microsecond), 3 * time.Second, since},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := steppedBack(since, sent, tc.now, tc.elapsed); !got.Equal(tc.want) {
				t.Errorf("steppedBack = %s, want %s", got, tc.want)
			}
		})
	}
}
