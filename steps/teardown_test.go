package steps_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/features"
	"github.com/gatehouse-dev/gatehouse/probe/wire"
	"github.com/gatehouse-dev/gatehouse/steps"
	"github.com/gatehouse-dev/gatehouse/steps/steptest"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// teardownTarget wraps the fake sandbox with what its teardown leaves:
// processes still listed after the reap, or a stop that fails.
type teardownTarget struct {
	*fakeTarget
	left    []int // what Processes reports (nil: nothing left)
	stopErr error
	lister  bool // the session can list its processes
}

func (t *teardownTarget) Start(ctx context.Context, spec targets.Spec) (targets.Session, error) {
	fs := &fakeSession{t: t.fakeTarget, name: spec.Name}
	if t.lister {
		return &listingSession{fakeSession: fs, t: t}, nil
	}
	return &stoppingSession{fakeSession: fs, err: t.stopErr}, nil
}

type listingSession struct {
	*fakeSession
	t *teardownTarget
}

func (s *listingSession) Processes(context.Context) ([]int, error) { return s.t.left, nil }

type stoppingSession struct {
	*fakeSession
	err error
}

func (s *stoppingSession) Stop(context.Context) error { return s.err }

func onlyControl(s wire.Step) bool { return s.ID == "positive-control" }

func TestTeardownFindingsReachTheResult(t *testing.T) {
	tests := []struct {
		name    string
		tgt     *teardownTarget
		deliver func(wire.Step) bool
		want    evidence.Verdict
		finding string
	}{
		{"clean teardown keeps the pass", &teardownTarget{lister: true}, onlyControl, evidence.Pass, ""},
		{"processes left after the reap make a pass inconclusive",
			&teardownTarget{lister: true, left: []int{4242}}, onlyControl, evidence.Inconclusive, "process(es) still running after the reap"},
		{"a fail stands whatever the teardown left",
			&teardownTarget{lister: true, left: []int{4242}}, func(wire.Step) bool { return true }, evidence.Fail, "process(es) still running after the reap"},
		{"a failed stop nothing can check makes a pass inconclusive",
			&teardownTarget{stopErr: errors.New("runtime wedged")}, onlyControl, evidence.Inconclusive, "teardown: stop failed: runtime wedged"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.tgt.fakeTarget = &fakeTarget{lab: &steptest.Lab{}, deliver: tt.deliver}
			out, err := steps.Run(context.Background(), steps.Config{
				Target: tt.tgt, Network: steps.NetLab, Lab: tt.tgt.lab, ProbePath: "/bin/true",
				Features: features.FS, Gates: []string{"external-callback"}, Settle: 1,
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Results) != 2 {
				t.Fatalf("want 2 results, got %d", len(out.Results))
			}
			for _, r := range out.Results {
				if r.Verdict != tt.want {
					t.Errorf("%s: %s (%s), want %s", r.Path, r.Verdict, r.Reason, tt.want)
				}
				if tt.finding == "" {
					if hasFinding(r.Findings, "teardown:") {
						t.Errorf("%s: teardown finding on a clean teardown: %q", r.Path, r.Findings)
					}
					continue
				}
				if !hasFinding(r.Findings, tt.finding) {
					t.Errorf("%s: findings %q lack %q", r.Path, r.Findings, tt.finding)
				}
				if tt.want == evidence.Inconclusive && !strings.Contains(r.Reason, "teardown left something behind") {
					t.Errorf("%s: reason does not say why: %s", r.Path, r.Reason)
				}
			}
		})
	}
}

func hasFinding(fs []string, sub string) bool {
	for _, f := range fs {
		if strings.Contains(f, sub) {
			return true
		}
	}
	return false
}
