package steps

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/cucumber/godog"

	"gatehouse/evidence"
	"gatehouse/probe"
	"gatehouse/targets"
)

type stateKey struct{}

// scenario is the state of one running scenario; it lives in the godog
// context, never in a global, because scenarios run concurrently.
type scenario struct {
	gate     string
	name     string
	start    time.Time
	session  string
	path     targets.Path
	canary   string // carried by every attempt; proves where a leak came from
	control  string // carried by the positive control only
	sess     targets.Session
	attached bool
	planned  []string
	attempts []evidence.Attempt
	findings []string
	corpus   []string
	judged   bool
}

func current(ctx context.Context) *scenario {
	s, _ := ctx.Value(stateKey{}).(*scenario)
	return s
}

func (r *runner) before(ctx context.Context, sc *godog.Scenario) (context.Context, error) {
	s := &scenario{name: sc.Name, start: time.Now(), gate: gateOf(sc)}
	return context.WithValue(ctx, stateKey{}, s), nil
}

// after tears the session down and makes sure every scenario leaves a
// verdict: one that never reached its Then step is INCONCLUSIVE, never PASS.
func (r *runner) after(ctx context.Context, sc *godog.Scenario, err error) (context.Context, error) {
	s := current(ctx)
	if s == nil {
		return ctx, nil
	}
	if !s.judged {
		reason := "the scenario stopped before a verdict could be made"
		if err != nil {
			reason += ": " + err.Error()
		}
		r.record(s.result(evidence.Judgement{Verdict: evidence.Inconclusive, Reason: reason}))
	}
	r.teardown(context.WithoutCancel(ctx), s)
	return ctx, nil
}

func (r *runner) teardown(ctx context.Context, s *scenario) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if s.sess != nil {
		if err := s.sess.Stop(ctx); err != nil {
			s.findings = append(s.findings, "stop failed: "+err.Error())
		}
	}
	if s.attached {
		_ = r.cfg.Lab.Detach(ctx, s.session)
	}
}

func (s *scenario) result(j evidence.Judgement) evidence.Result {
	s.judged = true
	return evidence.Result{
		Gate:       s.gate,
		Scenario:   s.name,
		Path:       string(s.path),
		Session:    s.session,
		Verdict:    j.Verdict,
		Reason:     j.Reason,
		Control:    j.Control,
		Attempts:   len(s.attempts),
		Hits:       j.Violating,
		Findings:   s.findings,
		Start:      s.start,
		DurationMS: float64(time.Since(s.start).Microseconds()) / 1000,
	}
}

func gateOf(sc *godog.Scenario) string {
	for _, t := range sc.Tags {
		if len(t.Name) > 1 {
			return t.Name[1:]
		}
	}
	return "untagged"
}

func token(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// toAttempts turns the probe's reports into evidence records.
func toAttempts(s *scenario, reps []probe.Report) []evidence.Attempt {
	out := make([]evidence.Attempt, 0, len(reps))
	for _, r := range reps {
		out = append(out, evidence.Attempt{
			Session: s.session, Scenario: s.gate + "/" + string(s.path), ID: r.ID, Kind: r.Kind,
			Target: r.Target, Outcome: r.Outcome, Error: r.Error, Status: r.Status,
			Start: r.Start, DurationMS: r.DurationMS,
		})
	}
	return out
}
