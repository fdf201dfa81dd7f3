package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// run --output json on real bwrap runs: stdout is one document valid
// against docs/schemas/run.v1.json that says what results.json says, the
// progress went to stderr, and the exit code is the text mode's.
func TestRunOutputJSON(t *testing.T) {
	needSandbox(t)
	t.Setenv("COSIGN_PASSWORD", "correct horse")
	prefix := filepath.Join(t.TempDir(), "ci")
	if r := gatehouse(t, context.Background(), "keys", "generate", "--out", prefix); r.code != exitOK {
		t.Fatalf("keys generate: exit %d: %s", r.code, r.stderr)
	}
	for _, tt := range []struct {
		name, profile string
		extra         []string
		code          int
		decision      string
		signed        bool
	}{
		{"leaky-unsigned", "bwrap-leaky.yaml", nil, exitViolation, "fail", false},
		{"hardened-signed", "bwrap-hardened.yaml", []string{"--key", prefix + ".key", "--archive"}, exitOK, "pass", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runProfile(t, tt.profile, "external-callback", append([]string{"--output", "json"}, tt.extra...)...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			d := validDoc(t, "run", r.stdout)
			if r.dir == "" {
				// runProfile finds the folder by globbing; the archive
				// next to it makes two matches, so read it back here.
				r.dir = readBack(t, &r, d["folder"])
			}
			if d["decision"] != tt.decision || d["exit_code"] != float64(tt.code) || d["signed"] != tt.signed {
				t.Errorf("document says decision %v, exit %v, signed %v; want %s, %d, %v", d["decision"], d["exit_code"], d["signed"], tt.decision, tt.code, tt.signed)
			}
			if d["folder"] != r.dir || d["id"] != r.run.ID {
				t.Errorf("document names folder %v (id %v), the run wrote %s (id %s)", d["folder"], d["id"], r.dir, r.run.ID)
			}
			if tt.signed {
				if _, err := os.Stat(filepath.Join(r.dir, "SHA256SUMS")); err != nil {
					t.Errorf("document says signed, folder has no SHA256SUMS: %v", err)
				}
				if a, _ := d["archive"].(string); a == "" {
					t.Errorf("--archive, but no archive in the document")
				} else if _, err := os.Stat(a); err != nil {
					t.Errorf("archive %s: %v", a, err)
				}
			}
			var got []map[string]any
			b, _ := json.Marshal(d["results"])
			_ = json.Unmarshal(b, &got)
			if len(got) != len(r.results) || len(got) != 2 {
				t.Fatalf("document has %d results, results.json %d (want 2)", len(got), len(r.results))
			}
			for _, res := range r.results {
				found := false
				for _, g := range got {
					if g["gate"] == res.Gate && g["path"] == res.Path {
						found = true
						if g["verdict"] != string(res.Verdict) || g["positive_control"] != res.Control || g["detection"] != "not measured" {
							t.Errorf("%s/%s: document %v, results.json %s control %v", res.Gate, res.Path, g, res.Verdict, res.Control)
						}
					}
				}
				if !found {
					t.Errorf("%s/%s missing from the document", res.Gate, res.Path)
				}
			}
			// The progress is on stderr, not mixed into the document.
			if !strings.Contains(r.stderr, "running external-callback") || !strings.Contains(r.stderr, "evidence: "+r.dir) {
				t.Errorf("progress and the evidence line should be on stderr:\n%s", r.stderr)
			}
			assertNothingLeft(t, r.stderr)
		})
	}
	t.Run("usage", func(t *testing.T) {
		r := gatehouse(t, context.Background(), "run", "--profile", profilePath("bwrap-hardened.yaml"), "--output", "yaml")
		if r.code != exitUsage || r.stdout != "" || !strings.Contains(r.stderr, "say text or json") {
			t.Errorf("--output yaml: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})
}

// readBack reads results.json and run.json of the folder the document names.
func readBack(t *testing.T, r *runOutput, folder any) string {
	t.Helper()
	dir, _ := folder.(string)
	for name, v := range map[string]any{"results.json": &r.results, "run.json": &r.run} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("the document's folder %q: %v", dir, err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A run whose hit trace reached its limit says so in its JSON document,
// as run.json does, and the document still matches its schema.
func TestRunDocCarriesTracesCut(t *testing.T) {
	rec := evidence.Run{ID: "r1", TracesCut: map[string]evidence.TraceCut{"traces/endpoint-hits.jsonl": {
		TraceLimit: evidence.DefaultTraceLimit, DroppedLines: 25_000, DroppedBytes: 3_150_000}}}
	results := []evidence.Result{{Gate: "external-callback", Path: "normal", Verdict: evidence.Inconclusive, Reason: "traces/endpoint-hits.jsonl reached its limit"}}
	var buf bytes.Buffer
	if err := writeJSON(&buf, runDocOf(rec, "d", nil, "i", "", results)); err != nil {
		t.Fatal(err)
	}
	doc := validDoc(t, "run", buf.String())
	cut, _ := doc["traces_cut"].(map[string]any)["traces/endpoint-hits.jsonl"].(map[string]any)
	if cut["dropped_lines"] != float64(25_000) || cut["max_lines"] != float64(evidence.DefaultTraceLines) {
		t.Fatalf("traces_cut = %v", doc["traces_cut"])
	}
	if err := schemaCheck(t, "run", strings.Replace(buf.String(), `"dropped_lines": 25000`, `"dropped_lines": 0`, 1)); err == nil {
		t.Error("the schema accepts a cut of no line")
	}
}
