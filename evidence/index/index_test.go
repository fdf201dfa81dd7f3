package index_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/index"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func row(id, policy, image string, ended time.Time) index.Run {
	run := evidence.Run{ID: id, Target: "process", Profile: "strict", PolicyDigest: policy,
		ImageDigest: image, Harness: "test", Start: ended.Add(-time.Minute), End: ended}
	results := []evidence.Result{
		{Gate: "egress", Scenario: "s", Path: "normal", Verdict: evidence.Pass, Control: true},
		{Gate: "egress", Scenario: "s", Path: "assume-breach", Verdict: evidence.Fail, Control: true},
	}
	return index.FromRun("/ev/"+id, run, results, "FAILED", "sha256:key", ended)
}

func open(t *testing.T, path string) *index.Index {
	t.Helper()
	ix, err := index.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

func TestRecordAndQuery(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), index.DefaultName)
	ix := open(t, path)
	for _, r := range []index.Run{
		row("a", "p1", "", t0),
		row("b", "p1", "", t0.Add(time.Hour)),      // newer, same config
		row("c", "p1", "img", t0.Add(2*time.Hour)), // other image
		row("d", "p2", "", t0.Add(3*time.Hour)),    // other policy
	} {
		if err := ix.Record(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Fatalf("no WAL file next to the index: %v", err)
	}
	// Recording the same id again replaces it, results included.
	if err := ix.Record(ctx, row("a", "p1", "", t0)); err != nil {
		t.Fatal(err)
	}
	hist, err := ix.History(ctx, 0)
	if err != nil || len(hist) != 4 || hist[0].ID != "d" || hist[3].ID != "a" {
		t.Fatalf("History = %d runs (%v), want d..a", len(hist), err)
	}
	if hist[0].Failed != 1 || hist[0].Passed != 1 || !hist[0].Ended.Equal(t0.Add(3*time.Hour)) {
		t.Fatalf("History row = %+v", hist[0])
	}
	cands, err := ix.Candidates(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) != 2 || cands[0].ID != "c" || cands[1].ID != "b" {
		t.Fatalf("Candidates = %v, want newest per image: c, b", ids(cands))
	}
	if len(cands[1].Results) != 2 || cands[1].Results[1].Verdict != evidence.Fail {
		t.Fatalf("results = %+v", cands[1].Results)
	}
	// Reopening applies no migration twice.
	ix.Close()
	ix2 := open(t, path)
	if h, err := ix2.History(ctx, 1); err != nil || len(h) != 1 {
		t.Fatalf("after reopen: %v %v", h, err)
	}
}

func ids(rs []index.Run) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// TestTwoWriters opens the same new file twice at once (as two CLI
// processes would) and writes from both concurrently.
func TestTwoWriters(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), index.DefaultName)
	var ixs [2]*index.Index
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for w := range ixs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ix, err := index.Open(ctx, path)
			if err != nil {
				errs <- err
				return
			}
			ixs[w] = ix
		}()
	}
	wg.Wait()
	for _, ix := range ixs {
		if ix == nil {
			t.Fatalf("concurrent Open failed: %v", <-errs)
		}
		t.Cleanup(func() { ix.Close() })
	}
	const per = 60
	for w, ix := range ixs {
		for g := 0; g < 2; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < per/2; i++ {
					id := fmt.Sprintf("w%d-g%d-%d", w, g, i)
					if err := ix.Record(ctx, row(id, "p", "", t0.Add(time.Duration(i)*time.Second))); err != nil {
						errs <- err
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent Record: %v", err)
	}
	hist, err := ixs[0].History(ctx, 0)
	if err != nil || len(hist) != 2*per {
		t.Fatalf("History = %d runs (%v), want %d", len(hist), err, 2*per)
	}
}
