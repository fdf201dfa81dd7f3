package steps

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/pressure"
)

// The binds are searched only once they were watched writeWatch since the
// session was seen gone (a search right after the settle missed a worker
// whose last write fell just before it), and never past maxWriteWatch.
func TestWatchWritesWaitsOutItsWatch(t *testing.T) {
	since := time.Now()
	got, err := watchWrites(context.Background(), since)
	if err != nil {
		t.Fatal(err)
	}
	if got < writeWatch || time.Since(since) < writeWatch {
		t.Errorf("watched %s, want at least %s", got, writeWatch)
	}
	// Long past: nothing more to wait for, and the time says so.
	long := time.Now().Add(-2 * maxWriteWatch)
	if got, err := watchWrites(context.Background(), long); err != nil || got < 2*maxWriteWatch {
		t.Errorf("since long past: watched %s (%v), want it counted from since", got, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := watchWrites(ctx, time.Now()); err == nil {
		t.Error("a cancelled run went on watching")
	}
}

// The stop's allowance counts I/O and memory waits only when the machine
// already waited on them before the stop: a sandbox whose own teardown
// waits on the disk must not excuse its slowness (machine-wide I/O
// pressure counts the sandbox's own tasks too).
func TestStopStall(t *testing.T) {
	beat := 400 * time.Millisecond
	for _, tc := range []struct {
		name         string
		stop, before pressure.Stalls
		want         time.Duration
	}{
		{"cpu counts always", pressure.Stalls{CPU: 3 * time.Second}, pressure.Stalls{}, 3 * time.Second},
		{"io on a quiet machine is the sandbox's own", pressure.Stalls{CPU: 100 * time.Millisecond, IO: 6 * time.Second}, pressure.Stalls{IO: 10 * time.Millisecond}, 100 * time.Millisecond},
		{"io under a neighbour's disk load counts", pressure.Stalls{CPU: 100 * time.Millisecond, IO: 6 * time.Second}, pressure.Stalls{IO: 300 * time.Millisecond}, 6 * time.Second},
		{"memory likewise", pressure.Stalls{Memory: 2 * time.Second}, pressure.Stalls{Memory: 100 * time.Millisecond}, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stopStall(tc.stop, tc.before, beat); got != tc.want {
				t.Errorf("stopStall = %s, want %s", got, tc.want)
			}
		})
	}
}
