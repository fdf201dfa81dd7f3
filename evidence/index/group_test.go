package index_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/index"
)

func shardRow(id, group, shard, gate string, ended time.Time) index.Run {
	run := evidence.Run{ID: id, Target: "bwrap", Profile: "strict", PolicyDigest: "p1", Harness: "test",
		Group: group, Shard: shard, Start: ended.Add(-time.Minute), End: ended}
	var results []evidence.Result
	for _, p := range []string{"normal", "assume-breach"} {
		results = append(results, evidence.Result{Gate: gate, Scenario: "s", Path: p, Verdict: evidence.Pass, Control: true})
	}
	return index.FromRun("/ev/"+id, run, results, "PASSED", "sha256:key", ended)
}

// The shards of a group are found together, and Candidates returns, besides
// the newest run, the newest run of every (gate, path): an older shard's
// gate is still decidable, an older run of a gate a newer one re-ran is not
// returned.
func TestGroupsAndCandidatesPerGate(t *testing.T) {
	ctx := context.Background()
	ix := open(t, filepath.Join(t.TempDir(), index.DefaultName))
	for _, r := range []index.Run{
		shardRow("old-egress", "g0", "1/2", "egress", t0),
		shardRow("s1", "g1", "1/2", "egress", t0.Add(time.Hour)),
		shardRow("s2", "g1", "2/2", "metadata", t0.Add(2*time.Hour)),
		shardRow("other", "g2", "", "dns", t0.Add(3*time.Hour)),
	} {
		if err := ix.Record(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	g, err := ix.Group(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(g); len(got) != 2 || got[0] != "s1" || got[1] != "s2" {
		t.Fatalf("Group(g1) = %v, want s1, s2", got)
	}
	if g[1].Group != "g1" || g[1].Shard != "2/2" || len(g[1].Results) != 2 {
		t.Fatalf("group row = %+v", g[1])
	}
	if g, _ := ix.Group(ctx, "none"); len(g) != 0 {
		t.Fatalf("Group(none) = %v", ids(g))
	}
	cands, err := ix.Candidates(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(cands); len(got) != 3 || got[0] != "other" || got[1] != "s2" || got[2] != "s1" {
		t.Fatalf("Candidates = %v, want other, s2, s1 (not old-egress)", got)
	}
}
