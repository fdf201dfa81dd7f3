package archtest_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/archtest"
)

// minRun is the shortest copied run of lines the guard refuses (blank and
// comment-only lines not counted).
const minRun = 30

// layers is the repository's layer table, lowest first, as the import
// graph stands (go list -f '{{.ImportPath}} {{join .Imports " "}}' ./...).
// A package may import its own layer and any below it, never one above.
// A new package goes into a row here, or the test says it is in none.
// docs/architecture.md shows the same table.
var layers = []archtest.Layer{
	// helpers, embedded data, the probe's wire format, and the probe (its
	// attempts: fenced, see fences)
	{"base", []string{
		"internal/...", "internal/ledger", "detect", "corpus", "features", "internal/probe/wire", "internal/probe", "internal/probe/probetest",
		"internal/targets/egress", "internal/targets/docker/ocishim", "targets/profiles", "evidence/keys", "evidence/keyless/...", "internal/lab/intake",
	}},
	// evidence records and what reads them: bundle, index, gate, diff, report
	{"records", []string{"evidence", "evidence/...", "internal/lab/model", "internal/lab/intake/contract"}},
	// the controlled endpoints
	{"lab", []string{"internal/lab", "internal/lab/labproxy"}},
	// the target contract and the profile: what every target shares. The
	// profile holds each kind's section without knowing its type, so it
	// imports no adapter (issue 23)
	{"contract", []string{"targets", "targets/...", "internal/targets/profile"}},
	// the adapters (each with its profile kind and section, listed in
	// internal/targets/kinds), and the host-process session kit that bwrap
	// and exec embed
	{"targets", []string{"internal/targets/...", "internal/hostsession"}},
	// monitors, alert readers, the agent CLIs, doctor
	{"detectors+agents", []string{"internal/agents", "internal/alerts", "internal/auditmon", "internal/monitor", "internal/doctor"}},
	// the godog steps
	{"suite", []string{"internal/steps", "internal/steps/steptest"}},
	// the one pipeline
	{"runner", []string{"internal/runner"}},
	// what people and CI run: the CLI, gatehousetest, examples, scripts
	{"faces", []string{"cmd/...", "gatehousetest", "examples/...", "scripts/..."}},
}

// knownUpward are the imports that run up the layers. None today: the lab
// describes the network it made (lab.Network, which the steps convert to
// targets.Network), and the runner takes the real wrappers' tools from the
// agents cache. An entry here must say why; the test fails on any other
// upward import, and on one of these that is gone.
var knownUpward []archtest.Exception

// knownDuplicates are the pairs of files that may share a run of minRun
// lines. None today: the copies internal/targets/bwrap and internal/targets/exec had are one
// host-session kit (internal/hostsession). An entry here must say why, and
// the test fails once it no longer holds.
var knownDuplicates []archtest.Exception

// fences are the packages only some packages may import. The probe's
// attempts are linked into the probe binary alone: the harness speaks to
// the probe through package internal/probe/wire (plan, step, report, kinds, facts),
// never by importing what runs in the guest. Only the probe's own tests may
// import it besides; probetest builds the binary and imports nothing of it.
var fences = []archtest.Fence{
	{Pkg: "internal/probe", Importers: []string{"cmd/gatehouse-probe", "internal/probe"}, Why: "the guest's attempts; the harness imports internal/probe/wire"},
}

// TestArchitecture is the guard make test runs: imports only go down the
// layers, and no run of minRun lines is copied between non-test Go files.
func TestArchitecture(t *testing.T) {
	probs, err := archtest.Problems(filepath.Join("..", ".."), layers, knownUpward, minRun, knownDuplicates)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Error(p)
	}
	probs, err = archtest.Fenced(filepath.Join("..", ".."), fences)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Error(p)
	}
}

// A fence finds every importer it does not name, test files included, and
// a fence around a package that is not there.
func TestFenceFindsPlantedImporters(t *testing.T) {
	fs := []archtest.Fence{
		{Pkg: "mid", Importers: []string{"mid", "top"}, Why: "planted"},
		{Pkg: "gone", Importers: []string{"top"}, Why: "planted"},
	}
	probs, err := archtest.Fenced(filepath.Join("testdata", "planted"), fs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"fence around gone: no such package",
		"base imports mid, which only mid, top may import (planted)",
		"stray imports mid, which only mid, top may import (planted)",
	}
	if len(probs) != len(want) {
		t.Errorf("%d problems, want %d:\n%s", len(probs), len(want), strings.Join(probs, "\n"))
	}
	for _, w := range want {
		found := false
		for _, p := range probs {
			found = found || strings.Contains(p, w)
		}
		if !found {
			t.Errorf("no problem says %q; got:\n%s", w, strings.Join(probs, "\n"))
		}
	}
}

// The guard fails on what it is for: a fixture module (testdata/planted)
// with an import up its layers, a package in no layer, a copied run and two
// exceptions that no longer hold.
func TestGuardFindsPlantedViolations(t *testing.T) {
	fixtureLayers := []archtest.Layer{
		{"low", []string{"base"}},
		{"middle", []string{"mid"}},
		{"high", []string{"top"}},
	}
	up := []archtest.Exception{{A: "top", B: "base", Why: "not upward: stale"}}
	dups := []archtest.Exception{{A: "mid/mid.go", B: "top/top.go", Why: "never shared: stale"}}
	probs, err := archtest.Problems(filepath.Join("testdata", "planted"), fixtureLayers, up, minRun, dups)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"package stray is in no layer",
		"base → mid imports a higher layer (low → middle)",
		"stale exception: top → base is no longer an upward import",
		"duplicated code: base/copy.go:",
		"stale exception: mid/mid.go and top/top.go no longer share a run of 30 lines",
	}
	for _, p := range probs {
		t.Log(p)
	}
	if len(probs) != len(want) {
		t.Errorf("%d problems, want %d:\n%s", len(probs), len(want), strings.Join(probs, "\n"))
	}
	for _, w := range want {
		found := false
		for _, p := range probs {
			found = found || strings.Contains(p, w)
		}
		if !found {
			t.Errorf("no problem says %q; got:\n%s", w, strings.Join(probs, "\n"))
		}
	}
}

// A copy is found re-indented and re-commented, from where it starts to
// where it ends; 29 shared lines are not a finding.
func TestDuplicatesMeasuresTheRun(t *testing.T) {
	runs, err := archtest.Duplicates(filepath.Join("testdata", "planted"), minRun)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1: %v", len(runs), runs)
	}
	r := runs[0]
	if r.A.File != "base/copy.go" || r.B.File != "mid/mid.go" || r.Lines != 32 {
		t.Errorf("got %s; want base/copy.go and mid/mid.go sharing 32 lines", r)
	}
	if runs, _ := archtest.Duplicates(filepath.Join("testdata", "planted"), 33); len(runs) != 0 {
		t.Errorf("with a minimum of 33 lines: %v, want none", runs)
	}
	runs, err = archtest.Duplicates(filepath.Join("testdata", "planted"), 29)
	if err != nil || len(runs) != 2 || runs[1].String() != "stray/stray.go:6-34 and top/top.go:9-37 share 29 lines" {
		t.Errorf("with a minimum of 29 lines: %v, %v; want the 32-line run and stray/top's 29", runs, err)
	}
}
