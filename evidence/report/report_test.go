package report_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/report"
	"github.com/gatehouse-dev/gatehouse/internal/termsafe"
)

// writeFolder lays out a run folder as the runner does, with one
// unparseable trace line (a probe may write anything).
func writeFolder(t testing.TB) string {
	t.Helper()
	run, results, hits, attempts := hostileInput()
	return writeRun(t, run, results, hits, attempts, nil, "{not json "+scriptPayload+"\n")
}

// writeRun writes the files Load reads; junk is appended to the hits trace.
func writeRun(t testing.TB, run evidence.Run, results []evidence.Result, hits []evidence.Hit, attempts []evidence.Attempt, alerts []alertLine, junk string) string {
	t.Helper()
	dir := t.TempDir()
	put := func(rel string, b []byte) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	js := func(v any) []byte { b, _ := json.Marshal(v); return b }
	put("run.json", js(run))
	put("results.json", js(results))
	var hl, al, tl bytes.Buffer
	for _, h := range hits {
		hl.Write(append(js(h), '\n'))
	}
	hl.WriteString(junk)
	for _, a := range attempts {
		al.Write(append(js(a), '\n'))
	}
	for _, a := range alerts {
		tl.Write(append(js(a), '\n'))
	}
	put(evidence.HitsTrace, hl.Bytes())
	put(evidence.AttemptsTrace, al.Bytes())
	if alerts != nil {
		tl.WriteString(`{"dropped":3,"why":"over the run's bound"}` + "\n")
		put(evidence.AlertsTrace, tl.Bytes())
	}
	return dir
}

func TestRenderEscapesHostileEvidence(t *testing.T) {
	dir := writeFolder(t)
	if err := report.WriteFile(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, evidence.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	for _, bad := range []string{"<script", "<img", `" onmouseover=`} {
		if strings.Contains(html, bad) {
			t.Errorf("report contains raw %q: hostile evidence was not escaped", bad)
		}
	}
	for _, want := range []string{
		"&lt;script&gt;document.title=",      // the payload, shown as text
		`<span class="v v-FAIL">FAIL</span>`, // a FAIL shown as FAIL
		`<span class="v v-INCONCLUSIVE">INCONCLUSIVE</span>`,
		"Overall: <span class=\"v v-FAIL\">FAIL</span>",
		"What this does NOT prove",
		"1 trace line(s) could not be read",
		"GET /control/tok123",     // the positive control hit of the PASS
		"169.254.169.254:80",      // an attempt as the probe reported it
		"bubblewrap 0.8.0",        // effective config
		"Content-Security-Policy", // scripts refused even if escaping failed
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// Self-contained: no attribute or stylesheet loads anything from outside.
	ext := regexp.MustCompile(`(?i)(?:src|href|action)\s*=\s*"([^"#][^"]*)"|url\(|@import`)
	if m := ext.FindAllString(html, -1); len(m) > 0 {
		t.Errorf("report refers to external assets: %q", m)
	}
}

func TestOverallFailsClosed(t *testing.T) {
	run, _, _, _ := hostileInput()
	tests := []struct {
		name    string
		results []evidence.Result
		want    string
	}{
		{"no results is inconclusive", nil, "Overall: <span class=\"v v-INCONCLUSIVE\">"},
		{"all pass", []evidence.Result{{Gate: "g", Path: "normal", Verdict: evidence.Pass, Control: true}}, "Overall: <span class=\"v v-PASS\">"},
		{"one skipped", []evidence.Result{{Gate: "g", Verdict: evidence.Pass}, {Gate: "h", Verdict: evidence.Skipped}}, "Overall: <span class=\"v v-INCONCLUSIVE\">"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := report.Render(&buf, report.Input{Run: run, Results: tt.results}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(buf.String(), tt.want) {
				t.Errorf("want %q in report", tt.want)
			}
		})
	}
}

func BenchmarkRender(b *testing.B) {
	dir := writeFolder(b)
	for b.Loop() {
		if _, err := report.Bytes(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// html/template stops markup but not what disguises text: a bidi override
// in a file name, invisible characters, C1 controls. The page shows each
// as an escape.
func TestRenderShowsDisguisingCharactersAsEscapes(t *testing.T) {
	run, results, hits, attempts := hostileInput()
	const disguised = "report\u202etxt.exe\u200b\u0085\x1b[2J\u2066"
	results[0].Hits[0].Summary = "GET /" + disguised
	results[0].Reason = "callback heard " + disguised
	hits[0].Data = disguised
	attempts[0].Error = disguised
	dir := writeRun(t, run, results, hits, attempts, nil, "")
	b, err := report.Bytes(dir)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	for _, r := range html {
		if r != '\n' && r != '\t' && termsafe.Hidden(r) {
			t.Fatalf("%U reached the page", r)
		}
	}
	if !strings.Contains(html, `report\u202etxt.exe`) {
		t.Errorf("the disguised name is not shown as escapes")
	}
}
