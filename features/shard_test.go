package features_test

import (
	"fmt"
	"testing"
	"testing/fstest"

	"github.com/gatehouse-dev/gatehouse/features"
)

// Every scenario of the real feature set is in exactly one shard, for
// every N from 1 to 5, and shard sizes differ by at most one.
func TestShardsPartitionTheRealFeatures(t *testing.T) {
	all, err := features.Scenarios(features.FS, nil)
	if err != nil {
		t.Fatal(err)
	}
	gates, _ := features.Gates(features.FS)
	if len(all) < len(gates) {
		t.Fatalf("%d scenarios for %d gates", len(all), len(gates))
	}
	for n := 1; n <= 5; n++ {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			seen := map[string]int{}
			minSize, maxSize := len(all), 0
			for k := 1; k <= n; k++ {
				sel := features.Shard{K: k, N: n}.Select(all)
				minSize, maxSize = min(minSize, len(sel)), max(maxSize, len(sel))
				for _, s := range sel {
					seen[s.Location()]++
				}
			}
			for _, s := range all {
				if seen[s.Location()] != 1 {
					t.Errorf("%s (%s) is in %d shards, want 1", s.Location(), s.Gate, seen[s.Location()])
				}
			}
			if len(seen) != len(all) {
				t.Errorf("shards hold %d scenarios, the features %d", len(seen), len(all))
			}
			if maxSize-minSize > 1 {
				t.Errorf("shard sizes range from %d to %d", minSize, maxSize)
			}
		})
	}
}

// The selection depends on the feature text only: not on the order the
// files are listed in, nor on the run.
func TestShardSelectionIsStable(t *testing.T) {
	a, err := features.Scenarios(features.FS, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := features.Scenarios(features.FS, nil)
	for k := 1; k <= 4; k++ {
		x, y := features.Shard{K: k, N: 4}.Select(a), features.Shard{K: k, N: 4}.Select(b)
		if fmt.Sprint(x) != fmt.Sprint(y) {
			t.Errorf("shard %d/4 differs between two listings:\n%v\n%v", k, x, y)
		}
	}
	// Sorted by gate then name, whatever the file names are.
	fsys := fstest.MapFS{
		"z.feature": {Data: []byte("@alpha\nFeature: a\n  Scenario: second\n    Given x\n  Scenario: first\n    Given y\n")},
		"a.feature": {Data: []byte("@beta\nFeature: b\n  Rule: r\n    Scenario: only\n      Given z\n")},
	}
	got, err := features.Scenarios(fsys, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "[{alpha first z.feature 5} {alpha second z.feature 3} {beta only a.feature 4}]"
	if fmt.Sprint(got) != want {
		t.Errorf("scenarios %v, want %s", got, want)
	}
	if sel := (features.Shard{K: 2, N: 2}).Select(got); fmt.Sprint(sel) != "[{alpha second z.feature 3}]" {
		t.Errorf("shard 2/2 = %v", sel)
	}
	only, _ := features.Scenarios(fsys, []string{"beta"})
	if len(only) != 1 || only[0].Gate != "beta" {
		t.Errorf("gate filter: %v", only)
	}
}

func TestParseShard(t *testing.T) {
	for in, want := range map[string]string{"1/1": "1/1", "2/4": "2/4", "4/4": "4/4"} {
		s, err := features.ParseShard(in)
		if err != nil || s.String() != want {
			t.Errorf("ParseShard(%q) = %v, %v", in, s, err)
		}
	}
	for _, bad := range []string{"", "0/4", "5/4", "2", "a/b", "2/0", "-1/4", "1/-1"} {
		if _, err := features.ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
}
