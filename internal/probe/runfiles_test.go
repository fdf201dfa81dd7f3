package probe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/probe"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// The form an agent runs: the plan from a file, the reports also appended
// to a file, which `probe show` prints back for the harness.
func TestRunWithPlanAndOutFiles(t *testing.T) {
	dir := t.TempDir()
	plan := wire.Plan{Session: "s1", Steps: []wire.Step{{ID: "r", Kind: wire.KindRead, Target: filepath.Join(dir, "missing")}}}
	b, _ := json.Marshal(plan)
	planFile, outFile := filepath.Join(dir, "plan.json"), filepath.Join(dir, "reports.jsonl")
	if err := os.WriteFile(planFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := probe.Main(context.Background(), []string{"run", "--plan", planFile, "--out", outFile}, strings.NewReader(""), &stdout, &stderr); code != probe.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var shown bytes.Buffer
	if code := probe.Main(context.Background(), []string{"show", outFile}, nil, &shown, &stderr); code != probe.ExitOK {
		t.Fatalf("show: exit %d: %s", code, stderr.String())
	}
	if shown.String() != stdout.String() || !strings.Contains(shown.String(), `"id":"r"`) {
		t.Fatalf("file holds %q, stdout was %q", shown.String(), stdout.String())
	}
	if code := probe.Main(context.Background(), []string{"run", "--plan", filepath.Join(dir, "none.json")}, nil, &stdout, &stderr); code != probe.ExitBadPlan {
		t.Fatalf("a missing plan file: exit %d, want %d", code, probe.ExitBadPlan)
	}
}
