package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/report"
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

// The report shows responses apart from the verdict: a Response column and,
// per answered session, its trigger and each effect with its latency; a
// result without a response says so ("—"). Hook output is the team's
// script's and escaped like any bundle text.
func TestReportShowsResponses(t *testing.T) {
	run, _, _, _ := hostileInput()
	gone, tok := 41.5, 3.0
	rs := []evidence.Result{
		{Gate: "external-callback", Path: "normal", Session: "s1", Verdict: evidence.Fail, Responses: []evidence.Response{{
			Mode: "exec:/x/<isolate>.sh", Session: "s1",
			Trigger: evidence.ResponseTrigger{Source: "builtin", Rule: "connect-outside-allowlist", Kind: "connect", Object: "203.0.113.10:80"},
			Hook:    &evidence.HookRun{Exit: 0},
			Effects: []evidence.ResponseEffect{
				{Effect: evidence.EffectProcessesGone, Observed: true, LatencyMS: &gone},
				{Effect: evidence.EffectEgressRefused, Reason: "not observed within 10s of the response"},
				{Effect: evidence.EffectTokenRefused, Observed: true, Before: false, LatencyMS: &tok},
			},
		}}},
		{Gate: "external-callback", Path: "assume-breach", Session: "s2", Verdict: evidence.Pass},
	}
	var buf bytes.Buffer
	if err := report.Render(&buf, report.Input{Run: run, Results: rs}); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, want := range []string{
		"<th>Response</th>", "<td>gone 42ms, egress no, token 3ms</td>", "<td>—</td>",
		"Response</strong> to s1 (exec:/x/&lt;isolate&gt;.sh)", "builtin · connect-outside-allowlist · connect 203.0.113.10:80",
		`<table class="response">`, "<td>processes-gone</td><td>yes</td><td>41.5 ms</td>", "not observed within 10s",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
