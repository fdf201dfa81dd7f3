package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
	"github.com/gatehouse-dev/gatehouse/evidence/index"
	"github.com/gatehouse-dev/gatehouse/features"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/runner"
)

// TestShardedRunGatedAsOneRelease runs every gate on bwrap-hardened as four
// real shards of one run group, signed with a generated key, and gates the
// release on them together; then takes one shard away (refused, naming its
// gates and paths) and makes one shard's newest evidence a failure
// (refused), and merges the group into one signed report.
func TestShardedRunGatedAsOneRelease(t *testing.T) {
	needSandbox(t)
	t.Setenv("COSIGN_PASSWORD", "correct horse")
	ctx := context.Background()
	dir := t.TempDir()
	prefix := filepath.Join(dir, "ci")
	key, pub := prefix+".key", prefix+".pub"
	if r := gatehouse(t, ctx, "keys", "generate", "--out", prefix); r.code != exitOK {
		t.Fatalf("keys generate: exit %d: %s", r.code, r.stderr)
	}
	probe := probetest.Build(t)
	hard := profilePath("bwrap-hardened.yaml")
	out := filepath.Join(dir, "runs")
	db := index.DefaultPath(out)
	const group = "pipeline-42"
	const n = 4
	shard := func(k int, code int, extra ...string) runOutput {
		t.Helper()
		args := append([]string{"run", "--profile", hard, "--shard", fmt.Sprintf("%d/%d", k, n), "--group", group,
			"--key", key, "--out", out, "--probe", probe, "--quiet"}, extra...)
		r := gatehouse(t, ctx, args...)
		if r.code != code {
			t.Fatalf("shard %d/%d: exit %d, want %d\n%s\n%s", k, n, r.code, code, r.stdout, r.stderr)
		}
		m := regexp.MustCompile(`(?m)^evidence: (.+)$`).FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("shard %d: no evidence line in\n%s", k, r.stdout)
		}
		r.dir = m[1]
		for name, v := range map[string]any{"run.json": &r.run, "results.json": &r.results} {
			b, err := os.ReadFile(filepath.Join(r.dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, v); err != nil {
				t.Fatal(err)
			}
		}
		return r
	}

	t.Run("usage", func(t *testing.T) {
		for _, tt := range []struct {
			args []string
			want string
		}{
			{[]string{"--shard", "2/4"}, "needs a run group"},
			{[]string{"--shard", "5/4", "--group", "g"}, "want K/N with 1 <= K <= N"},
			{[]string{"--shard", "10/10", "--group", "g"}, "selects no scenario"},
		} {
			t.Setenv("GATEHOUSE_PIPELINE", "")
			r := gatehouse(t, ctx, append([]string{"run", "--profile", hard, "--probe", probe, "--out", t.TempDir()}, tt.args...)...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("run %v: exit %d, want 2 and %q:\n%s", tt.args, r.code, tt.want, r.stderr)
			}
		}
	})

	all, err := features.Scenarios(features.FS, nil)
	if err != nil {
		t.Fatal(err)
	}
	gates, err := features.Gates(features.FS)
	if err != nil {
		t.Fatal(err)
	}
	var shards []runOutput
	ran := map[string]int{}     // scenario location -> shards that ran it
	results := map[string]int{} // gate/path -> results across shards
	for k := 1; k <= n; k++ {
		r := shard(k, exitOK)
		if r.run.Group != group || r.run.Shard != fmt.Sprintf("%d/%d", k, n) || len(r.run.Scenarios) == 0 {
			t.Errorf("shard %d run.json: group %q shard %q scenarios %v", k, r.run.Group, r.run.Shard, r.run.Scenarios)
		}
		for _, s := range r.run.Scenarios {
			ran[s]++
		}
		for _, x := range r.results {
			results[x.Gate+"/"+x.Path]++
		}
		shards = append(shards, r)
	}
	for _, s := range all {
		if ran[s.Location()] != 1 {
			t.Errorf("scenario %s (%s) ran in %d shards, want exactly 1", s.Location(), s.Gate, ran[s.Location()])
		}
	}
	for _, g := range gates {
		for _, p := range []string{"normal", "assume-breach"} {
			if results[g+"/"+p] != 1 {
				t.Errorf("%s/%s has %d results across the shards, want 1", g, p, results[g+"/"+p])
			}
		}
	}

	t.Run("the four shards allow the release together", func(t *testing.T) {
		r := gatehouse(t, ctx, "gate", "--key", pub, "--policy", hard, "--db", db, "--max-age", "1h")
		if r.code != exitOK || !strings.Contains(r.stdout, "PASS: release allowed by 4 runs") {
			t.Fatalf("gate: exit %d, want 0 allowed by 4 runs:\n%s%s", r.code, r.stdout, r.stderr)
		}
		for _, s := range shards {
			if !strings.Contains(r.stdout, "run "+s.run.ID) {
				t.Errorf("gate output does not cite shard %s (%s)", s.run.Shard, s.run.ID)
			}
		}
		r = gatehouse(t, ctx, "gate", "--key", pub, "--policy", hard, "--db", db, "--output", "json")
		doc := validDoc(t, "gate", r.stdout)
		if runs, _ := doc["runs"].([]any); r.code != exitOK || doc["decision"] != "allowed" || len(runs) != n {
			t.Errorf("gate json: exit %d, %v", r.code, doc)
		}
	})

	t.Run("merge writes one signed report over the group", func(t *testing.T) {
		mout := t.TempDir()
		r := gatehouse(t, ctx, "merge", "--group", group, "--key", key, "--db", db, "--out", mout)
		m := regexp.MustCompile(`(?m)^merge: (.+)$`).FindStringSubmatch(r.stdout)
		if r.code != exitOK || m == nil {
			t.Fatalf("merge: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
		}
		mdir := m[1]
		if r := gatehouse(t, ctx, "merge", "--verify", mdir, "--key", pub); r.code != exitOK {
			t.Fatalf("merge --verify: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
		}
		var doc bundle.Merge
		var merged []bundle.MergedResult
		for name, v := range map[string]any{"merge.json": &doc, "results.json": &merged} {
			b, err := os.ReadFile(filepath.Join(mdir, name))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, v); err != nil {
				t.Fatal(err)
			}
		}
		if len(doc.Shards) != n || len(doc.Missing) != 0 || len(doc.Superseded) != 0 {
			t.Errorf("merge.json: %d shards, missing %v, superseded %v", len(doc.Shards), doc.Missing, doc.Superseded)
		}
		for _, s := range shards {
			want, err := bundle.SumsDigest(s.dir)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, sh := range doc.Shards {
				found = found || (sh.Run == s.run.ID && sh.Shard == s.run.Shard && sh.SumsSHA256 == "sha256:"+want)
			}
			if !found {
				t.Errorf("merge.json lacks shard %s (%s) with SHA256SUMS sha256:%s", s.run.Shard, s.run.ID, want)
			}
		}
		once := map[string]int{}
		for _, x := range merged {
			once[x.Gate+"/"+x.Path]++
			if x.Shard == "" || x.Run == "" {
				t.Errorf("merged result %s/%s does not name its shard", x.Gate, x.Path)
			}
		}
		if len(merged) != 2*len(gates) || len(once) != 2*len(gates) {
			t.Errorf("merged %d results over %d gate/paths, want each of %d once", len(merged), len(once), 2*len(gates))
		}
		// An edited merged file is refused.
		p := filepath.Join(mdir, "results.json")
		b, _ := os.ReadFile(p)
		if err := os.WriteFile(p, append(b, ' '), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := gatehouse(t, ctx, "merge", "--verify", mdir, "--key", pub); r.code != exitViolation || !strings.Contains(r.stderr, "results.json") {
			t.Errorf("edited merge: exit %d, want 1 naming results.json:\n%s", r.code, r.stderr)
		}
	})

	t.Run("a missing shard is refused by gate and path", func(t *testing.T) {
		s, err := runner.LoadKey(key)
		if err != nil {
			t.Fatal(err)
		}
		// The load took the password out of this process; the CLI calls
		// below stand for processes of their own, started with it.
		os.Setenv("COSIGN_PASSWORD", "correct horse")
		partial := filepath.Join(t.TempDir(), index.DefaultName)
		var missing []string
		for i, r := range shards {
			if i == 2 {
				missing = r.run.Gates
				continue
			}
			if err := runner.Index(ctx, partial, r.dir, s); err != nil {
				t.Fatal(err)
			}
		}
		r := gatehouse(t, ctx, "gate", "--key", pub, "--policy", hard, "--db", partial)
		if r.code != exitViolation {
			t.Fatalf("gate without shard 3: exit %d, want 1:\n%s", r.code, r.stdout)
		}
		for _, g := range missing {
			for _, p := range []string{"normal", "assume-breach"} {
				if want := fmt.Sprintf("[gate-missing] gate %s has no result on path %s", g, p); !strings.Contains(r.stdout, want) {
					t.Errorf("refusal lacks %q:\n%s", want, r.stdout)
				}
			}
		}
		if strings.Count(r.stdout, "REFUSED") != 2*len(missing) {
			t.Errorf("want exactly the %d gate/paths of shard 3 refused:\n%s", 2*len(missing), r.stdout)
		}
		mr := gatehouse(t, ctx, "merge", "--group", group, "--key", key, "--db", partial, "--out", t.TempDir())
		if mr.code != exitOK || !strings.Contains(mr.stdout, "missing shards: 3/4") {
			t.Errorf("merge without shard 3: exit %d, want 0 naming 3/4 missing:\n%s%s", mr.code, mr.stdout, mr.stderr)
		}
	})

	// A failed shard: the shard holding stop-signal runs again, same
	// profile and policy, judged against a 1ms stop bound (--max-stop, a
	// bound of the run, not of the profile), so its stop-signal result is a
	// real FAIL. Being the newest evidence for stop-signal, it outvotes the
	// earlier shard's pass.
	t.Run("a newer failed shard is refused", func(t *testing.T) {
		k := 0
		for i := 1; i <= n; i++ {
			sel, err := runner.ShardScenarios(features.FS, gates, features.Shard{K: i, N: n})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range sel {
				if s.Gate == "stop-signal" {
					k = i
				}
			}
		}
		r := shard(k, exitViolation, "--max-stop", "1ms")
		failed := 0
		for _, x := range r.results {
			if x.Gate == "stop-signal" && x.Verdict == evidence.Fail {
				failed++
			}
		}
		if failed != 2 {
			t.Fatalf("re-run shard %d: %d stop-signal FAILs, want 2:\n%s", k, failed, r.stdout)
		}
		g := gatehouse(t, ctx, "gate", "--key", pub, "--policy", hard, "--db", db)
		for _, p := range []string{"normal", "assume-breach"} {
			want := fmt.Sprintf("[gate-fail] gate stop-signal FAILED on path %s", p)
			if g.code != exitViolation || !strings.Contains(g.stdout, want) || !strings.Contains(g.stdout, r.run.ID) {
				t.Errorf("gate after the failed shard: exit %d, want 1 and %q naming run %s:\n%s", g.code, want, r.run.ID, g.stdout)
			}
		}
	})
}
