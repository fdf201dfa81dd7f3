package report_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/report"
)

// Load keeps the alerts matched to some attempt; the "dropped" line and
// unmatched events are read, not kept, and not counted as unreadable.
func TestLoadReadsMatchedAlerts(t *testing.T) {
	run, results, hits, attempts, alerts := timelineInput()
	alerts = append(alerts, alertLine{Matched: []string{}})
	in, err := report.Load(writeRun(t, run, results, hits, attempts, alerts, ""))
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Alerts) != 2 || in.Unreadable != 0 {
		t.Fatalf("alerts %d, unreadable %d", len(in.Alerts), in.Unreadable)
	}
	if a := in.Alerts[0]; a.Source != "builtin" || a.Received.IsZero() || a.EventTime.IsZero() || len(a.Matched) != 1 {
		t.Errorf("first alert %+v", a)
	}
}

// The report draws a timeline per session of a scenario, up to the cap,
// and says so for a session with nothing timed and for the sessions over
// the cap.
func TestReportShowsTimelines(t *testing.T) {
	run, results, hits, attempts, _ := timelineInput()
	stop := evidence.Result{Gate: "stop-signal", Path: "normal", Session: "p0", Verdict: evidence.Pass, Start: t0, DurationMS: 9000}
	for i := 0; i < 6; i++ {
		stop.Stops = append(stop.Stops, evidence.StopSent{Session: fmt.Sprintf("p%d", i), At: t0.Add(time.Duration(100*i) * time.Millisecond)})
	}
	quiet := evidence.Result{Gate: "cloud-metadata", Path: "normal", Session: "quiet", Verdict: evidence.Inconclusive}
	var buf bytes.Buffer
	if err := report.Render(&buf, report.Input{Run: run, Results: append(results, stop, quiet), Hits: hits, Attempts: attempts}); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	if n := strings.Count(html, `<svg class="timeline"`); n != 1+4 {
		t.Errorf("%d timelines drawn, want 5 (1 + stop-signal's 4 of 6 sessions)", n)
	}
	for _, want := range []string{
		`<details class="timeline" open><summary>Timeline</summary>`,
		"… 2 more session(s) not drawn.",
		"no timed record of this session",
		"t = 0 at 10:00:00.100 UTC, span 2 s",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
