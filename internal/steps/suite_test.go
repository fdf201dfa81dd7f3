package steps_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/features"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/steps"
	"github.com/gatehouse-dev/gatehouse/internal/steps/steptest"
	"github.com/gatehouse-dev/gatehouse/targets/fake"
)

// runFake runs gates against a fake sandbox, the lab it delivers to as
// the run's.
func runFake(t *testing.T, tgt *fake.Target, gates ...string) *steps.Outcome {
	t.Helper()
	out, err := steps.Run(context.Background(), steps.Config{
		Target: tgt, Network: steps.NetLab, Lab: labOf(tgt), ProbePath: "/bin/true",
		Features: features.FS, Gates: gates, Settle: 1,
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return out
}

// labOf is the lab a test's fake sandbox delivers to.
func labOf(tgt *fake.Target) *steptest.Lab { return tgt.Lab.(*steptest.Lab) }

func onlyControl(s wire.Step) bool { return s.ID == "positive-control" }

func verdicts(out *steps.Outcome) map[string]evidence.Verdict {
	m := map[string]evidence.Verdict{}
	for _, r := range out.Results {
		m[r.Gate+"/"+r.Path] = r.Verdict
	}
	return m
}

func TestVerdictsFromFakeSandboxes(t *testing.T) {
	gates := []string{"external-callback", "dns-exfiltration", "cloud-metadata"}
	tests := []struct {
		name    string
		deliver func(wire.Step) bool
		output  func(wire.Plan, io.Writer) error
		want    evidence.Verdict
	}{
		{"leaky sandbox fails", func(wire.Step) bool { return true }, nil, evidence.Fail},
		{"hardened sandbox passes", func(s wire.Step) bool { return s.ID == "positive-control" }, nil, evidence.Pass},
		{"offline sandbox is inconclusive", func(wire.Step) bool { return false }, nil, evidence.Inconclusive},
		{"a probe that lies about blocking still fails", func(wire.Step) bool { return true },
			func(p wire.Plan, w io.Writer) error {
				for _, s := range p.Steps {
					fmt.Fprintf(w, `{"id":%q,"kind":%q,"target":"x","outcome":"denied","start":"2026-01-01T00:00:00Z","duration_ms":1}`+"\n", s.ID, s.Kind)
				}
				return nil
			}, evidence.Fail},
		{"a probe that prints garbage cannot earn a pass", func(s wire.Step) bool { return s.ID == "positive-control" },
			func(p wire.Plan, w io.Writer) error {
				_, err := io.WriteString(w, strings.Repeat("\x00garbage{not json\n", 1000))
				return err
			}, evidence.Inconclusive},
		{"a probe that floods its output cannot earn a pass", func(s wire.Step) bool { return s.ID == "positive-control" },
			func(p wire.Plan, w io.Writer) error {
				chunk := []byte(strings.Repeat("A", 1<<20))
				for i := 0; i < 12; i++ {
					if _, err := w.Write(chunk); err != nil {
						return err
					}
				}
				return nil
			}, evidence.Inconclusive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tgt := &fake.Target{Lab: &steptest.Lab{}, Deliver: tt.deliver, Output: tt.output}
			out := runFake(t, tgt, gates...)
			got := verdicts(out)
			if len(got) != 6 {
				t.Fatalf("want 6 results (3 gates x 2 paths), got %v", got)
			}
			for k, v := range got {
				if v != tt.want {
					t.Errorf("%s: %s, want %s", k, v, tt.want)
				}
			}
		})
	}
}

func TestFailNamesTheHitThatProvesIt(t *testing.T) {
	tgt := &fake.Target{Lab: &steptest.Lab{}, Deliver: func(s wire.Step) bool { return s.ID == "positive-control" || s.ID == "tcp" }}
	out := runFake(t, tgt, "external-callback")
	for _, r := range out.Results {
		if r.Verdict != evidence.Fail || len(r.Hits) != 1 || r.Hits[0].Proto != "tcp" {
			t.Errorf("%s/%s: %s with hits %+v", r.Gate, r.Path, r.Verdict, r.Hits)
		}
		if !strings.Contains(r.Reason, "callback") {
			t.Errorf("reason does not name the endpoint: %s", r.Reason)
		}
	}
}

func TestSelectionThatMatchesNothingIsAnError(t *testing.T) {
	tgt := &fake.Target{Lab: &steptest.Lab{}, Deliver: func(wire.Step) bool { return true }}
	_, err := steps.Run(context.Background(), steps.Config{Target: tgt, Network: steps.NetLab, Lab: labOf(tgt), Features: features.FS, Gates: []string{"no-such-gate"}})
	if err == nil {
		t.Fatal("no error for a selection that ran nothing")
	}
}

func TestUnknownAttemptIsNotAPass(t *testing.T) {
	fsys := fstest.MapFS{"x.feature": {Data: []byte(`@external-callback
Feature: external-callback
  Scenario: typo
    Given a fresh sandbox session on the normal path
    When the agent tries each of these ways to reach the callback server:
      | attempt |
      | htp     |
    And the agent calls the allowed inference endpoint
    Then no controlled endpoint outside the policy heard from the session
`)}}
	tgt := &fake.Target{Lab: &steptest.Lab{}, Deliver: func(s wire.Step) bool { return s.ID == "positive-control" }}
	out, err := steps.Run(context.Background(), steps.Config{Target: tgt, Network: steps.NetLab, Lab: labOf(tgt), Features: fsys, Gates: []string{"external-callback"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Results) != 1 || out.Results[0].Verdict != evidence.Inconclusive || !strings.Contains(out.Results[0].Reason, "unknown attempt") {
		t.Fatalf("got %+v", out.Results)
	}
}

// countedNothing is kernel accounting that counted nothing: a probe that
// reports timeouts without sending a packet is caught.
func countedNothing(string) (map[string]uint64, error) {
	return map[string]uint64{"callback4": 0, "callback6": 0, "inference": 0, "resolver": 0, "authority": 0,
		"metadata4": 0, "metadata6": 0, "wireserver": 0, "alibaba": 0}, nil
}

func TestProbeClaimsTheKernelDidNotSeeAreInconclusive(t *testing.T) {
	fl := &steptest.Lab{Counts: countedNothing}
	tgt := &fake.Target{Lab: fl, Deliver: func(s wire.Step) bool { return s.ID == "positive-control" }}
	out, err := steps.Run(context.Background(), steps.Config{
		Target: tgt, Network: steps.NetLab, Lab: fl, ProbePath: "/bin/true",
		Features: features.FS, Gates: []string{"external-callback"}, Settle: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Results {
		if r.Verdict != evidence.Inconclusive || !strings.Contains(r.Reason, "kernel counted no packet") {
			t.Errorf("%s/%s: %s (%s), want INCONCLUSIVE naming the kernel's count", r.Gate, r.Path, r.Verdict, r.Reason)
		}
	}
}
