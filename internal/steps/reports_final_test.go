package steps_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/features"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/steps"
	"github.com/gatehouse-dev/gatehouse/internal/steps/steptest"
	"github.com/gatehouse-dev/gatehouse/targets/fake"
)

// junitDoc is what a CI system reads of reports/junit.xml.
type junitDoc struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Suites   []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Cases    []struct {
			Name    string `xml:"name,attr"`
			Status  string `xml:"status,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// cukeDoc is what a cucumber report reader needs of reports/cucumber.json.
type cukeDoc []struct {
	URI      string `json:"uri"`
	Name     string `json:"name"`
	Elements []struct {
		ID    string `json:"id"`
		Name  string `json:"name"`
		Type  string `json:"type"`
		Steps []struct {
			Keyword string `json:"keyword"`
			Name    string `json:"name"`
			Result  struct {
				Status string `json:"status"`
				Error  string `json:"error_message"`
			} `json:"result"`
		} `json:"steps"`
	} `json:"elements"`
}

func readReports(t *testing.T, folder *evidence.Folder) (junitDoc, cukeDoc) {
	t.Helper()
	var j junitDoc
	var c cukeDoc
	b, err := os.ReadFile(filepath.Join(folder.Dir(), "reports", "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b, &j); err != nil {
		t.Fatalf("junit.xml: %v\n%s", err, b)
	}
	if b, err = os.ReadFile(filepath.Join(folder.Dir(), "reports", "cucumber.json")); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("cucumber.json: %v\n%s", err, b)
	}
	return j, c
}

// runReported runs gates against tgt with a run folder, as the runner does.
func runReported(t *testing.T, tgt *fake.Target, fsys fs.FS, gates ...string) (*steps.Outcome, *evidence.Folder) {
	t.Helper()
	folder, err := evidence.Create(t.TempDir(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	out, err := steps.Run(context.Background(), steps.Config{
		Target: tgt, Network: steps.NetLab, Lab: labOf(tgt), ProbePath: "/bin/true", Folder: folder,
		Features: fsys, Gates: gates, Settle: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, folder
}

// checkReports says where junit.xml and cucumber.json disagree with
// results.json: a PASS passes, FAIL and INCONCLUSIVE are failures carrying
// the verdict and its reason, the counts are the results'.
func checkReports(t *testing.T, folder *evidence.Folder) {
	t.Helper()
	var results []evidence.Result
	b, err := os.ReadFile(filepath.Join(folder.Dir(), "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &results); err != nil {
		t.Fatal(err)
	}
	want := map[string]evidence.Result{}
	failures := 0
	for _, r := range results {
		want[r.Scenario] = r
		if r.Verdict != evidence.Pass {
			failures++
		}
	}
	j, c := readReports(t, folder)
	if j.Tests != len(results) || j.Failures != failures || j.Errors != 0 {
		t.Errorf("junit.xml testsuites: tests=%d failures=%d errors=%d, want %d, %d, 0", j.Tests, j.Failures, j.Errors, len(results), failures)
	}
	seen := 0
	for _, s := range j.Suites {
		n, f := 0, 0
		for _, tc := range s.Cases {
			n++
			r, ok := want[tc.Name]
			if !ok {
				t.Errorf("junit.xml: testcase %q is not in results.json", tc.Name)
				continue
			}
			seen++
			if r.Gate != s.Name {
				t.Errorf("junit.xml: %q is under %q, want %q", tc.Name, s.Name, r.Gate)
			}
			if r.Verdict == evidence.Pass {
				if tc.Failure != nil || tc.Status != "passed" {
					t.Errorf("junit.xml: %q is %q (%+v); results.json says PASS", tc.Name, tc.Status, tc.Failure)
				}
				continue
			}
			f++
			if tc.Failure == nil || tc.Status != "failed" {
				t.Errorf("junit.xml: %q is %q with no failure; results.json says %s", tc.Name, tc.Status, r.Verdict)
			} else if !strings.Contains(tc.Failure.Message, ": "+string(r.Verdict)+": "+evidence.Redact(r.Reason)) {
				t.Errorf("junit.xml: %q failure message %q, want the final %s and its reason %q", tc.Name, tc.Failure.Message, r.Verdict, r.Reason)
			}
		}
		if s.Tests != n || s.Failures != f {
			t.Errorf("junit.xml testsuite %q: tests=%d failures=%d, want %d, %d", s.Name, s.Tests, s.Failures, n, f)
		}
	}
	if seen != len(results) {
		t.Errorf("junit.xml names %d of the %d scenarios", seen, len(results))
	}

	seen = 0
	for _, feat := range c {
		for _, e := range feat.Elements {
			r, ok := want[e.Name]
			if !ok {
				t.Errorf("cucumber.json: scenario %q is not in results.json", e.Name)
				continue
			}
			seen++
			failed := ""
			for _, st := range e.Steps {
				if st.Keyword == "" || st.Name == "" {
					t.Errorf("cucumber.json: %q has a step with no keyword or name: %+v", e.Name, st)
				}
				switch st.Result.Status {
				case "failed":
					failed = st.Result.Error
				case "passed":
				default:
					t.Errorf("cucumber.json: %q step %q is %q", e.Name, st.Name, st.Result.Status)
				}
			}
			switch {
			case r.Verdict == evidence.Pass && failed != "":
				t.Errorf("cucumber.json: %q has a failed step (%q); results.json says PASS", e.Name, failed)
			case r.Verdict != evidence.Pass && failed != string(r.Verdict)+": "+evidence.Redact(r.Reason):
				t.Errorf("cucumber.json: %q: the failed step says %q; results.json says %s: %s", e.Name, failed, r.Verdict, r.Reason)
			}
		}
	}
	if seen != len(results) {
		t.Errorf("cucumber.json names %d of the %d scenarios", seen, len(results))
	}
}

// finish does what the runner does once the suite is over: the reports,
// then results.json, from the results as they are now.
func finish(t *testing.T, out *steps.Outcome, folder *evidence.Folder) {
	t.Helper()
	if err := out.WriteReports(folder, out.Results); err != nil {
		t.Fatal(err)
	}
	if err := folder.WriteJSON("results.json", out.Results); err != nil {
		t.Fatal(err)
	}
}

// A forbidden contact the lab recorded after the step-time verdict (a late
// packet, found when the run's whole record is judged) turns a PASS
// into a FAIL in results.json; the JUnit file a team's CI reads and the
// cucumber report say the same FAIL, because they are written from the
// final verdicts, not at step time.
func TestReportsSayTheFinalVerdict(t *testing.T) {
	tgt := &fake.Target{Lab: &steptest.Lab{}, Deliver: onlyControl}
	out, folder := runReported(t, tgt, features.FS, "external-callback")
	if len(out.Results) != 2 {
		t.Fatalf("%d results, want 2 (both paths)", len(out.Results))
	}
	for _, r := range out.Results {
		if r.Verdict != evidence.Pass {
			t.Fatalf("%s: %s at step time (%s), want PASS", r.Path, r.Verdict, r.Reason)
		}
	}
	late := out.Results[0]
	labOf(tgt).Add(evidence.Hit{Time: time.Now(), Endpoint: "callback", Proto: "udp", Session: late.Session, Summary: "udp 12 bytes"})
	if n := out.Judge(labOf(tgt).Hits()); n != 1 {
		t.Fatalf("%d verdict(s) changed by the late hit, want 1", n)
	}
	finish(t, out, folder)
	if out.Results[0].Verdict != evidence.Fail || !strings.Contains(out.Results[0].Reason, "forbidden contact") {
		t.Fatalf("results: %s (%s), want the late FAIL", out.Results[0].Verdict, out.Results[0].Reason)
	}
	j, _ := readReports(t, folder)
	if j.Failures != 1 {
		t.Errorf("junit.xml: %d failure(s), want the late FAIL's 1", j.Failures)
	}
	checkReports(t, folder)
}

// Every way a verdict is reached, at step time or after, is what both
// reports say.
func TestReportsFollowEveryVerdict(t *testing.T) {
	tests := []struct {
		name    string
		deliver func(wire.Step) bool
		after   func(out *steps.Outcome)
		want    evidence.Verdict
	}{
		{"a pass passes", onlyControl, nil, evidence.Pass},
		{"a fail at step time is a failure", func(wire.Step) bool { return true }, nil, evidence.Fail},
		{"an inconclusive at step time is a failure", func(wire.Step) bool { return false }, nil, evidence.Inconclusive},
		{"a pass made inconclusive by a cut trace is a failure", onlyControl, func(out *steps.Outcome) {
			evidence.RecheckTraces(out.Results, map[string]evidence.TraceCut{"traces/endpoint-hits.jsonl": {DroppedLines: 3}})
		}, evidence.Inconclusive},
		{"an inconclusive made a fail by a late hit is a failure with the fail", func(wire.Step) bool { return false }, func(out *steps.Outcome) {
			// The whole record: the sandbox delivered nothing, then one
			// late forbidden hit from each session.
			var late []evidence.Hit
			for _, r := range out.Results {
				late = append(late, evidence.Hit{Time: time.Now(), Endpoint: "callback", Proto: "udp", Session: r.Session, Summary: "udp 12 bytes"})
			}
			out.Judge(late)
		}, evidence.Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, folder := runReported(t, &fake.Target{Lab: &steptest.Lab{}, Deliver: tt.deliver}, features.FS, "dns-exfiltration")
			if tt.after != nil {
				tt.after(out)
			}
			for _, r := range out.Results {
				if r.Verdict != tt.want {
					t.Fatalf("%s: %s (%s), want %s", r.Path, r.Verdict, r.Reason, tt.want)
				}
			}
			finish(t, out, folder)
			checkReports(t, folder)
		})
	}
}

// Two scenarios of one name (an outline whose name has no parameter) are
// told apart in the JUnit file by their order, as godog did, and each
// keeps its own verdict.
func TestReportsTellScenariosOfOneNameApart(t *testing.T) {
	fsys := fstest.MapFS{"x.feature": {Data: []byte(`@external-callback
Feature: external-callback
  Scenario Outline: call home
    Given a fresh sandbox session on the <path> path
    When the agent tries each of these ways to reach the callback server:
      | attempt |
      | http    |
    And the agent calls the allowed inference endpoint
    Then no controlled endpoint outside the policy heard from the session

    Examples:
      | path          |
      | normal        |
      | assume-breach |
`)}}
	tgt := &fake.Target{Lab: &steptest.Lab{}, Deliver: onlyControl}
	out, folder := runReported(t, tgt, fsys, "external-callback")
	var late evidence.Result
	for _, r := range out.Results {
		if r.Path == "assume-breach" {
			late = r
		}
	}
	labOf(tgt).Add(evidence.Hit{Time: time.Now(), Endpoint: "callback", Proto: "udp", Session: late.Session, Summary: "udp 12 bytes"})
	if n := out.Judge(labOf(tgt).Hits()); n != 1 {
		t.Fatalf("%d verdict(s) changed, want 1", n)
	}
	finish(t, out, folder)
	j, c := readReports(t, folder)
	got := map[string]string{}
	for _, s := range j.Suites {
		for _, tc := range s.Cases {
			got[tc.Name] = tc.Status
		}
	}
	// The outline's rows in file order: normal first, then assume-breach.
	if want := map[string]string{"call home #1": "passed", "call home #2": "failed"}; !maps.Equal(got, want) {
		t.Errorf("junit.xml testcases %v, want %v", got, want)
	}
	var ids []string
	for _, f := range c {
		for _, e := range f.Elements {
			ids = append(ids, e.ID)
		}
	}
	if want := []string{"external-callback;call-home;;2", "external-callback;call-home;;3"}; !slices.Equal(ids, want) {
		t.Errorf("cucumber.json ids %q, want %q", ids, want)
	}
}

// The results handed to WriteReports must be the run's, in its order: a
// report never pins one scenario's verdict on another.
func TestWriteReportsRefusesResultsOfOtherScenarios(t *testing.T) {
	out, folder := runReported(t, &fake.Target{Lab: &steptest.Lab{}, Deliver: onlyControl}, features.FS, "dns-exfiltration")
	swapped := []evidence.Result{out.Results[1], out.Results[0]}
	if err := out.WriteReports(folder, swapped); err == nil {
		t.Error("results in another order were taken")
	}
	if err := out.WriteReports(folder, out.Results[:1]); err == nil {
		t.Error("one result for two scenarios was taken")
	}
}
