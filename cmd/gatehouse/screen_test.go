package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
	"github.com/gatehouse-dev/gatehouse/evidence/comparison"
	"github.com/gatehouse-dev/gatehouse/evidence/diff"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/lab/intake"
	"github.com/gatehouse-dev/gatehouse/internal/lab/intake/contract"
	"github.com/gatehouse-dev/gatehouse/internal/steps"
	"github.com/gatehouse-dev/gatehouse/internal/termsafe"
)

// hostile is what a sandbox can put in a hit summary, a file name in the
// repository copy or a field of a bundle: an OSC title set ended by BEL, a
// screen clear, a CR that overwrites the verdict, a bidi override that
// disguises an extension, a C1 CSI, a newline that forges a line of its
// own, an isolate and bytes that are not UTF-8.
const hostile = "\x1b]0;owned\x07\x1b[2J report\u202etxt.exe\rPASS \u009b31m\nREHEARSAL PASS: forged\u2066\xff"

// inert fails unless out is valid UTF-8 with nothing but newlines that a
// terminal acts on, and nothing that reorders or hides text.
func inert(t *testing.T, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: not valid UTF-8:\n%q", what, out)
	}
	for _, r := range out {
		if r != '\n' && termsafe.Hidden(r) {
			t.Errorf("%s: %U reached the output:\n%q", what, r, out)
			return
		}
	}
}

// noForgedLine fails when a line of out starts with what only the
// hostile text's own newline could have started one with.
func noForgedLine(t *testing.T, what, out, forged string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, forged) {
			t.Errorf("%s: the sandbox forged a line %q:\n%s", what, l, out)
		}
	}
}

// Every verb prints through screen: a verb's error naming a hostile path
// reaches stderr escaped.
func TestEveryVerbPrintsThroughScreen(t *testing.T) {
	name := "/nonexistent/" + strings.ReplaceAll(hostile, "\n", "")
	for _, args := range [][]string{
		{"diff", name, "/nonexistent/b"},
		{"history", name},
		{"merge", name},
		{"no-such-verb" + hostile},
	} {
		t.Run(args[0][:4], func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(context.Background(), args, &out, &errb); code == exitOK {
				t.Fatalf("exit 0 for %q", args)
			}
			inert(t, "stdout", out.String())
			inert(t, "stderr", errb.String())
			if !strings.Contains(errb.String(), "report") {
				t.Errorf("the error does not name the path: %q", errb.String())
			}
		})
	}
}

// The live status line writes its own redraw codes, and nothing else raw:
// progress a printer forgot to escape is escaped on its way through.
func TestLiveLineEscapesProgress(t *testing.T) {
	var out bytes.Buffer
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLiveLine(&out, func() time.Time { return clock })
	_, _ = l.Write([]byte("lab up; got " + hostile + "\n"))
	l.Close()
	got := strings.ReplaceAll(out.String(), clearLine, "")
	got = strings.ReplaceAll(got, "… 0 scenario(s) done: 0 PASS, 0 FAIL, 0 INCONCLUSIVE  0s", "")
	inert(t, "live progress", got)
	if !strings.Contains(got, `\x1b]0;owned\x07`) {
		t.Errorf("the escape sequence is not shown: %q", got)
	}
}

// The live line redraws over the terminal under a screen writer too.
func TestLiveLineUnderScreenWritesRedrawsRaw(t *testing.T) {
	var out bytes.Buffer
	l := newLiveLine(screen(&out), time.Now)
	_, _ = l.Write([]byte("line\n"))
	l.Close()
	if !strings.Contains(out.String(), clearLine) {
		t.Errorf("the redraw was escaped: %q", out.String())
	}
}

func hostileResults(secret string) []evidence.Result {
	return []evidence.Result{{
		Gate: "external-callback", Path: "assume-breach", Session: "gh-1-s1", Verdict: evidence.Fail,
		Reason: "1 forbidden hit carrying " + secret + ": " + hostile,
		Hits:   []evidence.Hit{{Endpoint: "callback", Proto: "http", Src: "10.0.0.2", Summary: "POST /x?k=" + secret + " " + hostile}},
	}}
}

func TestSummaryTableIsInert(t *testing.T) {
	var out bytes.Buffer
	printSummary(&out, hostileResults("ghc0123456789abcdef"))
	inert(t, "summary", out.String())
	noForgedLine(t, "summary", out.String(), "REHEARSAL PASS")
	if strings.Contains(out.String(), "ghc0123456789abcdef") {
		t.Errorf("the canary was printed:\n%s", out.String())
	}
}

func TestVerifiedIsInert(t *testing.T) {
	v := &bundle.Verified{Dir: "/runs/r1", Signer: "key sha256:00",
		Run: evidence.Run{ID: "r1" + hostile, Target: "bwrap" + hostile, Profile: hostile, ProfileFile: hostile,
			Model: hostile, Agent: hostile, Corpus: hostile, Commit: hostile, Pipeline: hostile, Complete: true},
		Results: []evidence.Result{{Gate: "g" + hostile, Path: "normal" + hostile, Verdict: evidence.Verdict("PASS" + hostile), Reason: hostile}},
	}
	var out bytes.Buffer
	printVerified(&out, v)
	inert(t, "verify", out.String())
	noForgedLine(t, "verify", out.String(), "REHEARSAL PASS")
}

func TestDiffIsInert(t *testing.T) {
	r := diff.Report{
		Gates:   []diff.Gate{{Gate: "g" + hostile, Path: "normal" + hostile, A: evidence.Pass, B: evidence.Fail, BReason: hostile}},
		Changes: []diff.Change{{Section: "policy", Key: "p.yaml" + hostile, Diff: "-a\n+" + hostile + "\n"}},
	}
	var out bytes.Buffer
	printGates(&out, r)
	printChanges(&out, r)
	inert(t, "diff", out.String())
	noForgedLine(t, "diff", out.String(), "REHEARSAL PASS")
}

// The rehearsal prints file names the agent made in the repository copy,
// what it stored in the intake and what it claimed.
func TestRehearsalIsInert(t *testing.T) {
	oc := steps.RehearsalOutcome{
		Expected:   steps.RehearsalExpected{Denied: steps.ExpectedContact{Endpoint: "callback", URL: "http://x/" + hostile}},
		Denied:     &evidence.Attempt{Outcome: hostile},
		DeniedDest: hostile,
		Arrived:    []evidence.Hit{{Endpoint: "callback", Proto: hostile, Src: hostile, Summary: hostile}},
		Stored: &intake.Entry{Subject: intake.Subject{Tenant: hostile, Run: hostile, Report: hostile},
			Result: &intake.Result{Severity: hostile, Summary: hostile}},
		OutOfScope: []intake.Entry{{Subject: intake.Subject{Tenant: hostile, Run: hostile, Report: hostile}}},
		Smuggled:   []steps.TreeChange{{Path: ".github/workflows/" + hostile, Change: "added", Watched: hostile}},
	}
	var out bytes.Buffer
	printRehearsal(&out, oc, []evidence.Result{{Verdict: evidence.Fail, Reason: hostile}})
	inert(t, "rehearsal", out.String())
	noForgedLine(t, "rehearsal", out.String(), "REHEARSAL PASS")
	if !strings.Contains(out.String(), `report\u202etxt.exe`) {
		t.Errorf("the disguised file name is not shown as escapes:\n%s", out.String())
	}
}

// Every kind of value the harness makes, printed through the run's
// output (the summary table, and screen under a printer that forgot to
// redact), comes out as <kind>.
func TestMintedValuesAreRedactedInPrint(t *testing.T) {
	ctx := context.Background()
	broker, err := lab.NewBroker(lab.BrokerOptions{}).Issue("gh-1-s1", "respond")
	if err != nil {
		t.Fatal(err)
	}
	m, err := intake.NewMinter(intake.MinterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sub := intake.Subject{Run: "r1", Report: "p1", Tenant: "t1"}
	runTok, err := m.Mint(sub, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A team's token command, whose tokens have no format Gatehouse knows.
	teamTok, err := contract.CommandMint("echo team-token-5f3a9c")(ctx, sub, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ what, value, kind string }{
		{"lab credential", "GHCANARY-awssecret-00112233445566778899aabbccddeeff00112233", "<canary>"},
		{"IMDS token", "GHCANARY-imdsv2-00112233445566778899aabbccddeeff0011223344556677", "<canary>"},
		{"session canary", "ghc0123456789abcdef", "<canary>"},
		{"host nonce", "ghhost0123456789abcdef", "<canary>"},
		{"persistence value", "ghst0123456789abcdef", "<canary>"},
		{"broker token", broker, "<broker-token>"},
		{"intake run token", runTok, "<intake-token>"},
		{"team intake token", teamTok, "<intake-token>"},
		{"model key", "gh.gh-1-s1.ghctl0123456789abcdef.1", "<model-key>"},
	} {
		t.Run(tt.what, func(t *testing.T) {
			var table bytes.Buffer
			printSummary(&table, hostileResults(tt.value))
			var raw bytes.Buffer
			fmt.Fprintf(screen(&raw), "gatehouse: warning: %s\n", tt.value)
			for name, out := range map[string]string{"summary": table.String(), "screen": raw.String()} {
				if strings.Contains(out, tt.value) {
					t.Errorf("%s: the %s was printed:\n%s", name, tt.what, out)
				}
				if !strings.Contains(out, tt.kind) {
					t.Errorf("%s: no %s in:\n%s", name, tt.kind, out)
				}
			}
		})
	}
}

// `intake mint` exists to print a token: it does, whole.
func TestIntakeMintPrintsItsToken(t *testing.T) {
	m, err := intake.NewMinter(intake.MinterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seed := t.TempDir() + "/seed"
	if err := os.WriteFile(seed, []byte(hex.EncodeToString(m.Seed())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"intake", "mint", "--seed-file", seed, "--run", "r", "--report", "p", "--tenant", "t"}, &out, &errb)
	tok := strings.TrimSpace(out.String())
	if code != exitOK || !strings.HasPrefix(tok, intake.TokenPrefix+".") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	if _, err := intake.Verify(m.PublicKey(), tok, time.Now()); err != nil {
		t.Fatalf("the printed token does not verify: %v", err)
	}
}

// compare over run folders a sandbox wrote into: the terminal, the .txt
// and the .html show escapes; the .json is still JSON with the same values,
// and safe to cat.
func TestCompareOfHostileRunsIsInert(t *testing.T) {
	dir := t.TempDir()
	label := "attempt " + hostile
	var runs []string
	for i, prof := range []string{"a" + hostile, "b"} {
		d := filepath.Join(dir, fmt.Sprint("run", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		run, _ := json.Marshal(evidence.Run{ID: fmt.Sprint("r", i), Profile: prof, Target: "bwrap", Complete: true})
		res, _ := json.Marshal([]evidence.Result{{Gate: "external-callback", Path: "normal", Verdict: evidence.Fail, Reason: hostile,
			Hits: []evidence.Hit{{Endpoint: "callback", Proto: "http", Dst: "203.0.113.10:80", Attempt: label}}}})
		if err := errors.Join(os.WriteFile(filepath.Join(d, "run.json"), run, 0o644), os.WriteFile(filepath.Join(d, "results.json"), res, 0o644)); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, "--run", d)
	}
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), append([]string{"compare", "--out", out}, runs...), &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	inert(t, "stdout", stdout.String())
	inert(t, "stderr", stderr.String())
	files, _ := filepath.Glob(filepath.Join(out, "compare-*"))
	if len(files) != 3 {
		t.Fatalf("want .json .txt .html, got %q", files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inert(t, filepath.Base(f), strings.ReplaceAll(string(b), "\t", ""))
		if filepath.Ext(f) == ".json" {
			var c comparison.Comparison
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatalf("%s is not JSON: %v", f, err)
			}
			if got := c.Matrix[0].Cells[0].Through; len(got) != 1 || !strings.Contains(got[0], strings.ReplaceAll(label, "\xff", "\ufffd")) {
				t.Errorf("%s lost the value: %q", f, got)
			}
		}
	}
}

// The merge report escapes markup and shows what disguises text as
// escapes; the canary in a reason is redacted.
func TestMergeReportIsInert(t *testing.T) {
	doc := bundle.Merge{Group: "g" + hostile, Shards: []bundle.MergeShard{{Run: "r1" + hostile, Shard: "1/2", Profile: "<b>p</b>" + hostile}}, Missing: []string{hostile}}
	merged := []bundle.MergedResult{{Run: "r1" + hostile, Result: evidence.Result{Gate: "g", Path: "normal" + hostile, Verdict: evidence.Fail, Reason: "ghc0123456789abcdef " + hostile}}}
	var out bytes.Buffer
	if err := writeMergeReport(&out, doc, merged); err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(out.String(), "\t", "")
	inert(t, "merge report", s)
	if strings.Contains(s, "<b>p") || strings.Contains(s, "ghc0123456789abcdef") {
		t.Errorf("markup or the canary reached the page:\n%s", s)
	}
}
