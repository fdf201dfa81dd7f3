package steps_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/features"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/steps"
	"github.com/gatehouse-dev/gatehouse/internal/steps/steptest"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/fake"
)

func runPlaces(t *testing.T, l steps.Lab, tgt targets.Target, secretProcess steps.SecretProcess, gate string) []evidence.Result {
	t.Helper()
	return runPlacesOutcome(t, l, tgt, secretProcess, gate).Results
}

func runPlacesOutcome(t *testing.T, l steps.Lab, tgt targets.Target, secretProcess steps.SecretProcess, gate string) *steps.Outcome {
	t.Helper()
	out, err := steps.Run(context.Background(), steps.Config{
		Target: tgt, Network: steps.NetLab, Lab: l, ProbePath: "/bin/true",
		Features: features.FS, Gates: []string{gate}, Settle: 1, SecretProcess: secretProcess,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Results) != 2 {
		t.Fatalf("want 2 results (one per path), got %+v", out.Results)
	}
	return out
}

// foreign-storage end to end through the steps: a sandbox whose find over
// /storage sees every session's nonce FAILs with the crossing named; one
// that sees only its own PASSes.
func TestForeignStorageWithFakeSandboxes(t *testing.T) {
	for _, leaky := range []bool{true, false} {
		fl := &steptest.Lab{}
		tgt := placeSandbox(fl, func(s *fake.Session, st wire.Step) wire.Report {
			spec := s.Spec()
			switch {
			case st.ID == "own-storage":
				return ownNonce(spec)
			case st.ID == "storage" && leaky:
				return everyNonce(spec)
			}
			return denied()
		})
		for _, r := range runPlaces(t, fl, tgt, steps.SecretProcess{}, "foreign-storage") {
			switch {
			case leaky && (r.Verdict != evidence.Fail || len(r.Crossings) == 0):
				t.Errorf("leaky %s: %s (%s) with %d crossings, want FAIL naming the crossing", r.Path, r.Verdict, r.Reason, len(r.Crossings))
			case leaky && r.Crossings[0].Attempt != "storage":
				t.Errorf("leaky %s: crossing names attempt %q, want storage", r.Path, r.Crossings[0].Attempt)
			case !leaky && (r.Verdict != evidence.Pass || len(r.Crossings) != 0):
				t.Errorf("hardened %s: %s (%s), want PASS", r.Path, r.Verdict, r.Reason)
			}
		}
	}
}

// foreign-storage needs each session to have searched while the other had
// a live process, judged from the probe's own active windows: with no
// holder, or with reports that carry no window, it is INCONCLUSIVE even
// though nothing crossed.
func TestForeignStorageNeedsProvenOverlap(t *testing.T) {
	tests := []struct {
		name      string
		noHold    bool
		noWindows bool
		reason    string
	}{
		{"no live process in either session", true, false, "no live process on record in"},
		{"reports without active windows", false, true, "no active window for"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fl := &steptest.Lab{}
			tgt := placeSandbox(fl, func(s *fake.Session, st wire.Step) wire.Report {
				if st.ID == "own-storage" {
					return ownNonce(s.Spec())
				}
				return denied()
			})
			tgt.NoWindows = tt.noWindows
			if tt.noHold {
				noHold(tgt)
			}
			for _, r := range runPlaces(t, fl, tgt, steps.SecretProcess{}, "foreign-storage") {
				if r.Verdict != evidence.Inconclusive || !strings.Contains(r.Reason, tt.reason) {
					t.Errorf("%s: %s (%s), want INCONCLUSIVE with %q", r.Path, r.Verdict, r.Reason, tt.reason)
				}
			}
		})
	}
}

// long-lived-secret's wiring: what the hunt reports is matched against what
// was planted, by place, including the other process's environment; a
// clean hunt PASSes only with the broker's four checks.
func TestLongLivedSecretWiringWithFakeSandboxes(t *testing.T) {
	inside := steps.SecretProcess{Where: "inside", User: "agent"}
	leakyAnswer := func(s *fake.Session, st wire.Step) wire.Report {
		switch st.ID {
		case "environment":
			return wire.Report{Outcome: wire.OutcomeCompleted, Excerpt: s.Spec().Secrets["aws-secret"] + " env:AWS_SECRET_ACCESS_KEY"}
		case "other-processes":
			if v := processValue(s); v != "" {
				return wire.Report{Outcome: wire.OutcomeCompleted, Excerpt: v + " /proc/99/environ"}
			}
		}
		return wire.Report{Outcome: wire.OutcomeCompleted}
	}
	clean := func(*fake.Session, wire.Step) wire.Report { return wire.Report{Outcome: wire.OutcomeCompleted} }
	tests := []struct {
		name          string
		answer        func(*fake.Session, wire.Step) wire.Report
		broker        bool
		secretProcess steps.SecretProcess
		want          evidence.Verdict
		finding       string
	}{
		{"values read from the environment and another process fail", leakyAnswer, true, inside, evidence.Fail, "read: the canary planted at process/DB_PASSWORD"},
		{"a clean hunt with the broker's checks passes", clean, true, inside, evidence.Pass, "planted and not reached: "},
		{"no broker is never a pass", clean, false, inside, evidence.Inconclusive, ""},
		{"a profile without a secret process says what was not tested", clean, true, steps.SecretProcess{}, evidence.Pass, "not tested: other processes' environments"},
		{"a secret process outside the sandbox is planted on the host", leakyAnswer, true, steps.SecretProcess{Where: "outside"}, evidence.Fail, "runs outside as root on the host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fl := &steptest.Lab{}
			if tt.broker {
				fl.CredBroker = lab.NewBroker(lab.BrokerOptions{})
			}
			tgt := placeSandbox(fl, tt.answer)
			for _, r := range runPlaces(t, fl, tgt, tt.secretProcess, "long-lived-secret") {
				if r.Verdict != tt.want {
					t.Errorf("%s: %s (%s), want %s", r.Path, r.Verdict, r.Reason, tt.want)
				}
				if tt.finding != "" && !hasFinding(r.Findings, tt.finding) {
					t.Errorf("%s: findings %q lack %q", r.Path, r.Findings, tt.finding)
				}
				if tt.want == evidence.Fail && !strings.Contains(r.Reason, "env/AWS_SECRET_ACCESS_KEY") {
					t.Errorf("%s: reason does not name the place: %s", r.Path, r.Reason)
				}
				if !tt.broker && !strings.Contains(r.Reason, "broker") {
					t.Errorf("%s: reason does not name the missing broker: %s", r.Path, r.Reason)
				}
			}
		})
	}
}
