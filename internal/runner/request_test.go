package runner_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/index"
	"github.com/gatehouse-dev/gatehouse/features"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/runner"
	"github.com/gatehouse-dev/gatehouse/internal/steps"
	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

func shipped(t *testing.T, name string) *profile.Profile {
	t.Helper()
	p, err := kinds.Load(filepath.Join("..", "..", "targets", "profiles", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The zero request is a whole run of the built-in gates with the probe:
// every default is decided in NewSpec, and what the face knows is recorded.
func TestNewSpecDefaults(t *testing.T) {
	prof := shipped(t, "bwrap-offline.yaml")
	spec, err := runner.NewSpec(context.Background(), runner.Request{Profile: prof, ProfileFile: "p.yaml", Out: "out",
		Agent: "probe", Commit: "c1", Pipeline: "go test", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	known, err := features.Gates(features.FS)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(spec.Gates, known) || !slices.Equal(spec.Plan.Gates, known) {
		t.Errorf("gates %v, plan %v; want every built-in gate %v", spec.Gates, spec.Plan.Gates, known)
	}
	if spec.MaxStop != steps.DefaultMaxStop {
		t.Errorf("max stop %s, want %s", spec.MaxStop, steps.DefaultMaxStop)
	}
	if spec.TargetName != "bwrap" || spec.ProfileFile != "p.yaml" || spec.Out != "out" || spec.Features == nil {
		t.Errorf("target %q, profile file %q, out %q, features %v", spec.TargetName, spec.ProfileFile, spec.Out, spec.Features)
	}
	r := spec.Record
	if r.Agent != "probe" || r.Commit != "c1" || r.Pipeline != "go test" || r.Model != "m" || r.AgentSandbox != "" || r.AgentVersion != "" {
		t.Errorf("record %+v: want what the request said, and no agent install", r)
	}
	if spec.Agent != nil || spec.Model != nil {
		t.Error("the probe run has an agent")
	}
	if spec.Public != lab.DefaultPublic() {
		t.Errorf("public %+v, want the default %+v", spec.Public, lab.DefaultPublic())
	}
}

// What a request gets wrong is refused before anything starts, as a
// *ConfigError (the CLI's exit 2) that says what to do.
func TestNewSpecRefuses(t *testing.T) {
	offline, leaky := shipped(t, "bwrap-offline.yaml"), shipped(t, "bwrap-leaky.yaml")
	for _, tc := range []struct {
		name string
		req  runner.Request
		want string
	}{
		{"an unknown gate", runner.Request{Profile: offline, Gates: []string{"external-callback", "nope"}}, `unknown gate "nope"; known gates: `},
		{"an agent sandbox neither on nor off", runner.Request{Profile: offline, AgentSandbox: "maybe"}, `--agent-sandbox "maybe": say on or off`},
		{"an agent without the lab's model", runner.Request{Profile: offline, Agent: "codex"}, "needs the lab's scripted model"},
		{"an agent not known", runner.Request{Profile: leaky, Agent: "no-such-agent"}, "no-such-agent"},
		{"a key next to a guest that reaches the host", runner.Request{Profile: leaky, Signed: true, SignKey: "cosign.key"}, "--key refused"},
		{"a shard without a group", runner.Request{Profile: offline, Shard: features.Shard{K: 1, N: 2}}, "needs a run group"},
		{"a shard of nothing", runner.Request{Profile: offline, Gates: []string{"external-callback"}, Shard: features.Shard{K: 99, N: 99}, Group: "g"}, "selects no scenario"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runner.NewSpec(context.Background(), tc.req)
			var ce *runner.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err %v (%T), want a *runner.ConfigError", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %q does not say %q", err, tc.want)
			}
		})
	}
}

// PlanOnly (run --check) checks the profile, gates and signing and opens
// nothing: an agent that is not installed is not looked at.
func TestNewSpecPlanOnlyOpensNothing(t *testing.T) {
	leaky := shipped(t, "bwrap-leaky.yaml")
	spec, err := runner.NewSpec(context.Background(), runner.Request{Profile: leaky, Agent: "no-such-agent", PlanOnly: true})
	if err != nil {
		t.Fatalf("plan only: %v", err)
	}
	if spec.Agent != nil || spec.Record.Agent != "no-such-agent" {
		t.Errorf("plan only opened agent %v; record %q", spec.Agent, spec.Record.Agent)
	}
	if _, err := runner.NewSpec(context.Background(), runner.Request{Profile: leaky, Signed: true, PlanOnly: true}); err == nil {
		t.Error("plan only let a keyless run seal next to a guest that reaches the host")
	}
}

// A shard's plan shows the shard's gates; the Spec keeps every gate asked
// for, and Execute takes the same shard of them.
func TestNewSpecShardPlansItsGates(t *testing.T) {
	offline := shipped(t, "bwrap-offline.yaml")
	gates := []string{"external-callback", "cloud-metadata"}
	for k := 1; k <= 2; k++ {
		sh := features.Shard{K: k, N: 2}
		spec, err := runner.NewSpec(context.Background(), runner.Request{Profile: offline, Gates: gates, Shard: sh, Group: "pipe-1"})
		if err != nil {
			t.Fatal(err)
		}
		sel, err := runner.ShardScenarios(features.FS, gates, sh)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, s := range sel {
			if !slices.Contains(want, s.Gate) {
				want = append(want, s.Gate)
			}
		}
		if !slices.Equal(spec.Gates, gates) || !slices.Equal(spec.Plan.Gates, want) || spec.Record.Group != "pipe-1" || spec.Shard != sh {
			t.Errorf("shard %s: gates %v, plan %v (want %v), group %q", sh, spec.Gates, spec.Plan.Gates, want, spec.Record.Group)
		}
	}
}

// Finish is the tail every face uses: sealed (here with a key), renamed,
// verified again, archived where asked and recorded in the index.
func TestFinishSealsArchivesAndIndexes(t *testing.T) {
	out := t.TempDir()
	s, _ := testSealer(t)
	src := unsignedRun(t, t.TempDir())
	folder := copyToFolder(t, src, out)
	db := filepath.Join(out, index.DefaultName)
	kept, err := runner.Finish(context.Background(), folder, runner.Keeping{Sealer: s, Index: db, ArchiveDir: out})
	if err != nil {
		t.Fatal(err)
	}
	if kept.Dir != filepath.Join(out, filepath.Base(src)) || kept.Index != db || kept.Archive != kept.Dir+".tar.gz" {
		t.Errorf("kept %+v", kept)
	}
	for _, p := range []string{filepath.Join(kept.Dir, "SHA256SUMS"), kept.Archive} {
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}
	ix, err := index.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	runs, err := ix.Candidates(context.Background(), "sha256:"+strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].KeyFingerprint != s.Fingerprint() {
		t.Errorf("index holds %+v, want the one signed run", runs)
	}
}

// copyToFolder copies a run folder's files into a new evidence folder
// under out, with the same id, as a run that just finished leaves it.
func copyToFolder(t *testing.T, src, out string) *evidence.Folder {
	t.Helper()
	folder, err := evidence.Create(out, filepath.Base(src))
	if err != nil {
		t.Fatal(err)
	}
	err = fs.WalkDir(os.DirFS(src), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(filepath.Join(src, rel))
		if err != nil {
			return err
		}
		return folder.WriteFile(rel, b)
	})
	if err != nil {
		t.Fatal(err)
	}
	return folder
}
