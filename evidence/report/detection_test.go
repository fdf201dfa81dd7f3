package report_test

import (
	"bytes"
	"strings"
	"testing"

	"gatehouse/evidence"
	"gatehouse/evidence/report"
)

// The report shows detection apart from the verdict: a Detection column in
// the verdict table and, per scenario, one row per attempt; a run without
// detectors says "not measured", never "missed".
func TestReportShowsDetection(t *testing.T) {
	run, _, _, _ := hostileInput()
	lat, yes := 42.0, true
	rs := []evidence.Result{
		{Gate: "external-callback", Path: "normal", Session: "s1", Verdict: evidence.Pass, Control: true, Detection: &evidence.Detection{
			Measured: true, Sources: []string{"builtin"}, Attempts: []evidence.DetectionAttempt{
				{ID: "http", Kind: "connect", Object: "203.0.113.10:80", Prevented: &yes, Observable: true, Detected: &evidence.Detected{Source: "builtin", Rule: "egress-<any>", LatencyMS: &lat}},
				{ID: "icmp", Prevented: &yes, Reason: "no observable object for a icmp attempt"},
			}}},
		{Gate: "external-callback", Path: "assume-breach", Session: "s2", Verdict: evidence.Pass, Control: true},
	}
	var buf bytes.Buffer
	if err := report.Render(&buf, report.Input{Run: run, Results: rs}); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, want := range []string{
		"<th>Detection</th>", "<td>1/1 p50 42ms</td>", `<table class="detection">`,
		"builtin · egress-&lt;any&gt;", "42.0 ms", "not observable", "no observable object",
		"<td>not measured</td>", evidence.NotMeasured,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
