package steps

import (
	"context"
	"testing"
	"time"
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
