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
// was already waiting on them before the stop (the kernel's ten-second
// average): a sandbox whose own teardown waits on the disk must not excuse
// its slowness (machine-wide I/O pressure counts the sandbox's own tasks).
func TestStopStall(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stop    pressure.Stalls
		io, mem float64 // avg10 at the stop, percent
		want    time.Duration
	}{
		{"cpu counts always", pressure.Stalls{CPU: 3 * time.Second}, 0, 0, 3 * time.Second},
		{"io on a quiet machine is the sandbox's own", pressure.Stalls{CPU: 100 * time.Millisecond, IO: 6 * time.Second}, 3, 0, 100 * time.Millisecond},
		{"io under a neighbour's disk load counts", pressure.Stalls{CPU: 100 * time.Millisecond, IO: 6 * time.Second}, 80, 0, 6 * time.Second},
		{"memory likewise", pressure.Stalls{Memory: 2 * time.Second}, 0, 40, 2 * time.Second},
		{"memory on a quiet machine does not", pressure.Stalls{Memory: 2 * time.Second}, 0, 10, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stopStall(tc.stop, pressure.Avg10Reading(tc.io, tc.mem)); got != tc.want {
				t.Errorf("stopStall = %s, want %s", got, tc.want)
			}
		})
	}
}
