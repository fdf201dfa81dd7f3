package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/ocistore"
	"github.com/gatehouse-dev/gatehouse/internal/runner"
)

func resultsOf(vs ...evidence.Verdict) []evidence.Result {
	var rs []evidence.Result
	for _, v := range vs {
		rs = append(rs, evidence.Result{Gate: "g", Scenario: "s", Verdict: v})
	}
	return rs
}

// Every condition a verb reports, and what it exits with.
func TestExitCodeTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"no error", nil, exitOK},
		{"help printed", flag.ErrHelp, exitOK},
		{"help from a flag set a verb wrapped as usage (intake mint --help)", &usageError{flag.ErrHelp}, exitOK},
		{"usage error", usagef("run: --profile is required"), exitUsage},
		{"usage error wrapped by a verb", fmt.Errorf("gate: %w", usagef("bad index")), exitUsage},
		{"the verb's usage wins over a library refusal inside", usagef("seal: %w", runner.ErrNotSealable), exitUsage},
		{"refused", refusedf("NOT VERIFIED: %s", "signature"), exitViolation},
		{"the verb's refusal wins over a library usage error inside", refusedf("push: refused: %w", ocistore.ErrRef), exitViolation},
		{"a gate FAILed", outcome(resultsOf(evidence.Pass, evidence.Fail, evidence.Inconclusive)), exitViolation},
		{"a gate INCONCLUSIVE, none FAILed", outcome(resultsOf(evidence.Pass, evidence.Inconclusive)), exitInconclusive},
		{"no scenario ran", outcome(nil), exitInconclusive},
		{"every gate passed or was skipped", outcome(resultsOf(evidence.Pass, evidence.Skipped)), exitOK},
		{"a FAIL joined with a teardown error", errors.Join(outcome(resultsOf(evidence.Fail)), errors.New("close")), exitViolation},
		{"no target from this profile here", fmt.Errorf("run: %w", &runner.ConfigError{Err: errors.New("unknown target")}), exitUsage},
		{"a bad OCI layout reference", fmt.Errorf("push: %w", fmt.Errorf("x: %w", ocistore.ErrRef)), exitUsage},
		{"no index (gate, merge, history alike)", fmt.Errorf("history: %w", fmt.Errorf("%w at x.db", errNoIndex)), exitViolation},
		{"a folder that is not a finished unsigned run", fmt.Errorf("seal: %w: partial", runner.ErrNotSealable), exitViolation},
		{"interrupted", fmt.Errorf("run: %w", context.Canceled), exitInconclusive},
		{"anything else: could not finish", errors.New("write results.json: disk full"), exitInconclusive},
		{"the OCI runtime shim passes its code on", &runtimeExit{7}, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := exitCode(tc.err); got != tc.want {
				t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

// run --output json carries the same decision and code the verb exits with.
func TestDecideIsTheExitCode(t *testing.T) {
	for _, tc := range []struct {
		rs       []evidence.Result
		decision string
		code     int
	}{
		{resultsOf(evidence.Pass), "pass", exitOK},
		{resultsOf(evidence.Pass, evidence.Fail), "fail", exitViolation},
		{resultsOf(evidence.Inconclusive, evidence.Pass), "inconclusive", exitInconclusive},
		{nil, "inconclusive", exitInconclusive},
	} {
		d, code := decide(tc.rs)
		if d != tc.decision || code != tc.code || code != exitCode(outcome(tc.rs)) {
			t.Errorf("decide(%v) = %s %d, want %s %d (and the verb's exit code)", tc.rs, d, code, tc.decision, tc.code)
		}
	}
}

func TestReportPrintsWhatHappened(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string // the whole of stderr
	}{
		{"help: nothing", &usageError{flag.ErrHelp}, ""},
		{"shim: nothing", &runtimeExit{1}, ""},
		{"refusal", refusedf("gate: release refused (1 reason(s), first: stale)"), "gatehouse: gate: release refused (1 reason(s), first: stale)\n"},
		{"outcome", outcome(resultsOf(evidence.Fail, evidence.Fail)), "gatehouse: 2 scenario(s) FAILED: the sandbox let a forbidden effect happen\n"},
		{"interrupted: the note", fmt.Errorf("run: %w", context.Canceled),
			"gatehouse: run: context canceled\ngatehouse: interrupted; nothing was left behind and no run was recorded as complete\n"},
		{"usage wrapping an interruption: no note", usagef("lab: %w", context.Canceled), "gatehouse: lab: context canceled\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			code := report(tc.err, &b)
			if b.String() != tc.want || code != exitCode(tc.err) {
				t.Errorf("report: exit %d, stderr %q; want exit %d, stderr %q", code, b.String(), exitCode(tc.err), tc.want)
			}
		})
	}
}

// No verb picks a number: the exit code constants and os.Exit appear only
// in exitcodes.go (and os.Exit in main). A verb that needs a new condition
// adds a typed error and a row to exitTable.
func TestOnlyTheTableChoosesExitCodes(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]bool{"exitOK": true, "exitViolation": true, "exitUsage": true, "exitInconclusive": true}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "exitcodes.go" {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Ident:
				if consts[n.Name] {
					t.Errorf("%s: %s: a verb picks an exit code; return a typed error and let exitTable decide", fset.Position(n.Pos()), n.Name)
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "os" && n.Sel.Name == "Exit" && f != "main.go" {
					t.Errorf("%s: os.Exit outside main", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
}
