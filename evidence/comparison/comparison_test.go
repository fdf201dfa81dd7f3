package comparison

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

func TestMatrixTakesWorstVerdictAndNamesWhatGotThrough(t *testing.T) {
	hit := evidence.Hit{Endpoint: "callback", Proto: "http", Dst: "203.0.113.10:80", Attempt: "proxy-rebind"}
	again := hit
	again.Attempt = "proxy-rebind@after-takedown" // named once with its base
	late := hit
	late.Attempt = "http@after-takedown" // only after the takedown: kept
	dns := evidence.Hit{Endpoint: "dns-authority", Proto: "dns", Dst: "203.0.113.54:53"}
	c := &Comparison{Profiles: []Column{
		{Profile: "a", Results: []evidence.Result{
			{Gate: "g", Path: "normal", Verdict: evidence.Pass, Control: true},
			{Gate: "g", Path: "normal", Verdict: evidence.Inconclusive, Reason: "control failed"},
		}},
		{Profile: "b", Results: []evidence.Result{
			{Gate: "g", Path: "assume-breach", Verdict: evidence.Fail, Hits: []evidence.Hit{hit, hit, again, late, dns}},
			{Gate: "g", Path: "assume-breach", Verdict: evidence.Fail, Hits: []evidence.Hit{{Endpoint: "callback", Proto: "tcp", Dst: "[2001:db8::10]:9000"}},
				Crossings: []evidence.Crossing{{Attempt: "receive-sysv-shm"}, {Attempt: "receive-sysv-shm"}}},
		}},
		{Profile: "c", Error: "srt is not installed here"},
	}}
	c.Build()
	tests := []struct {
		row, col int
		verdict  string
		through  string
		reason   string
	}{
		{0, 0, "INCONCLUSIVE", "", "control failed"},
		{0, 1, "-", "", "not run"},
		{0, 2, "-", "", "srt is not installed"},
		{1, 0, "-", "", "not run"},
		{1, 1, "FAIL", "callback http :80 [http@after-takedown proxy-rebind], dns-authority dns, callback tcp :9000, value via receive-sysv-shm", ""},
	}
	if len(c.Matrix) != 2 || c.Matrix[0].Path != "normal" {
		t.Fatalf("matrix = %+v", c.Matrix)
	}
	for _, tt := range tests {
		cell := c.Matrix[tt.row].Cells[tt.col]
		if cell.Verdict != tt.verdict || strings.Join(cell.Through, ", ") != tt.through || !strings.Contains(cell.Reason, tt.reason) {
			t.Errorf("cell %d,%d = %+v", tt.row, tt.col, cell)
		}
		if c.Matrix[tt.row].Verdicts[tt.col] != tt.verdict {
			t.Errorf("verdicts %d,%d = %v", tt.row, tt.col, c.Matrix[tt.row].Verdicts)
		}
	}
	if got := c.Matrix[1].Cells[1].Hits; got != 8 {
		t.Errorf("hits and crossings = %d, want 8", got)
	}
}

// TestPageEscapesHostileValuesAndCarriesNoScript: run folders are hostile
// input; nothing in them may become markup or script on the page.
func TestPageEscapesHostileValuesAndCarriesNoScript(t *testing.T) {
	evil := `<script>alert(1)</script>`
	c := &Comparison{ID: "cmp1", Profiles: []Column{
		{Profile: evil, Target: "bwrap", Runtime: evil, Results: []evidence.Result{{Gate: "external-callback", Path: "normal", Verdict: evidence.Fail, Reason: evil,
			Hits: []evidence.Hit{{Endpoint: evil, Proto: "http", Dst: "203.0.113.10:80"}}}}},
		{Profile: "b", Error: evil},
	}}
	c.Build()
	var buf bytes.Buffer
	if err := c.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if strings.Contains(page, "<script") {
		t.Errorf("page carries a script tag")
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("hostile value not shown escaped")
	}
	if !strings.Contains(page, "default-src 'none'") {
		t.Errorf("no CSP")
	}
	for _, want := range []string{`id="matrix"`, `id="through"`, `id="notpassed"`, "no complete verdicts", "0 / 1 / 0", "0 / 0 / 0"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	var txt bytes.Buffer
	c.WriteText(&txt)
	for _, want := range []string{"external-callback", "FAIL", "what got through", "no complete verdicts"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, txt.String())
		}
	}
}

func TestReadRun(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, v any) {
		b, _ := json.Marshal(v)
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("run.json", evidence.Run{ID: "r1", Profile: "srt-default", Target: "srt", Complete: false, Error: "interrupted",
		Effective: map[string]any{"normal": map[string]any{"runtime": "srt 0.0.83"}}})
	write("results.json", []evidence.Result{{Gate: "g", Path: "normal", Verdict: evidence.Pass}})
	var col Column
	if err := ReadRun(&col, dir); err != nil {
		t.Fatal(err)
	}
	if col.Runtime != "srt 0.0.83" || col.Target != "srt" || col.Sealed != "" || !strings.Contains(col.Error, "interrupted") || len(col.Results) != 1 {
		t.Errorf("column = %+v", col)
	}
	os.WriteFile(filepath.Join(dir, "results.json"), []byte("{not json"), 0o644)
	if err := ReadRun(&Column{}, dir); err == nil {
		t.Error("a broken results.json read without error")
	}
	if err := ReadRun(&Column{}, t.TempDir()); err == nil {
		t.Error("an empty folder read without error")
	}
}

// A cell shows at most four channels, without their attempt lists; the
// table below the matrix keeps everything.
func TestCellIsBriefTableIsWhole(t *testing.T) {
	var hits []evidence.Hit
	for _, port := range []string{"80", "22", "25", "853", "8080", "8443"} {
		hits = append(hits, evidence.Hit{Endpoint: "callback", Proto: "tcp", Dst: "192.88.99.10:" + port, Attempt: "tcp-" + port})
	}
	c := &Comparison{Profiles: []Column{{Profile: "leaky", Results: []evidence.Result{{Gate: "external-callback", Path: "normal", Verdict: evidence.Fail, Hits: hits}}}}}
	c.Build()
	var buf bytes.Buffer
	if err := c.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if !strings.Contains(page, "through: callback tcp :80, callback tcp :22, callback tcp :25, callback tcp :853, &#43;2 more") {
		t.Errorf("cell not brief")
	}
	if !strings.Contains(page, "callback tcp :8443 [tcp-8443]") {
		t.Errorf("table lost a channel or its attempt")
	}
}
