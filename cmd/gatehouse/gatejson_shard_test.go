package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/gate"
	"github.com/gatehouse-dev/gatehouse/evidence/index"
)

// A decision resting on the shards of a group lists every run with what it
// decided, and the document still matches gatehouse.gate/v1.
func TestGateDocumentCitesEveryShard(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	row := func(id, shard, g string, ended time.Time) index.Run {
		var rs []evidence.Result
		for _, p := range gate.Paths {
			rs = append(rs, evidence.Result{Gate: g, Scenario: "s", Path: p, Verdict: evidence.Pass, Control: true})
		}
		run := evidence.Run{ID: id, PolicyDigest: "sha256:" + strings.Repeat("a", 64), Group: "pipe-7", Shard: shard, End: ended}
		return index.FromRun("/ev/"+id, run, rs, "PASSED", "sha256:k", now)
	}
	req := gate.Request{PolicyDigest: "sha256:" + strings.Repeat("a", 64), Require: []string{"egress", "metadata"}, Now: now}
	d := gate.Decide(req, []index.Run{row("s1", "1/2", "egress", now.Add(-2*time.Hour)), row("s2", "2/2", "metadata", now.Add(-time.Hour))})
	if !d.Pass {
		t.Fatal(d.Reason())
	}
	b, err := json.Marshal(decisionDoc(req, "p.yaml", d, "key sha256:k"))
	if err != nil {
		t.Fatal(err)
	}
	doc := validDoc(t, "gate", string(b))
	runs, _ := doc["runs"].([]any)
	if len(runs) != 2 {
		t.Fatalf("runs = %v", doc["runs"])
	}
	first, _ := runs[0].(map[string]any)
	if first["id"] != "s2" || first["shard"] != "2/2" || first["group"] != "pipe-7" ||
		strings.Join(toStrings(first["decides"]), ",") != "metadata/normal,metadata/assume-breach" {
		t.Errorf("first run = %v", first)
	}
	if run, _ := doc["run"].(map[string]any); run["id"] != "s2" {
		t.Errorf("run = %v, want the newest deciding run s2", doc["run"])
	}
	// The schema refuses a cited run that does not say what it decided.
	broken := strings.Replace(string(b), `"decides":["metadata/normal","metadata/assume-breach"]`, `"decides":[]`, 1)
	if broken == string(b) {
		t.Fatal("test did not edit the document")
	}
	if err := schemaCheck(t, "gate", broken); err == nil {
		t.Errorf("schema accepted a run that decides nothing: %s", broken)
	}
}
