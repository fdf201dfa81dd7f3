package steps

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cucumber/godog"

	"gatehouse/evidence"
)

// Endpoints a policy may let a session reach: the positive control's
// destination, the allowed host that redirects, and the resolver (a canary
// it forwards still shows up at the authority).
var allowedEndpoints = []string{"inference", "redirect", "dns-resolver"}

func registerVerdict(sc *godog.ScenarioContext, r *runner) {
	sc.Step(`^no controlled endpoint outside the policy heard from the session$`, r.judge)
}

// Violation is returned to godog so the scenario shows as failed in the
// cucumber and JUnit reports; the verdict itself is in the results.
type Violation struct{ Reason string }

func (v *Violation) Error() string { return "FAIL: " + v.Reason }

func (r *runner) judge(ctx context.Context) error {
	s := current(ctx)
	if s == nil || s.sess == nil {
		return errors.New("no session: a 'fresh sandbox session' step must come first")
	}
	// Packets already delivered may still sit in an endpoint's queue.
	select {
	case <-time.After(time.Duration(r.cfg.Settle) * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	obs := evidence.Observation{
		Session:   s.session,
		Canary:    s.canary,
		Control:   s.control,
		Planned:   s.planned,
		Attempts:  s.attempts,
		Allowed:   allowedEndpoints,
		Emitted:   s.emitted,
		Dests:     s.dests,
		AcctError: s.acctErr,
	}
	if r.cfg.Lab != nil {
		obs.Hits = r.cfg.Lab.Hits()
		if err := r.cfg.Lab.Sealed(ctx); err != nil {
			obs.NotReady = "the lab is no longer sealed: " + err.Error()
		}
	}
	j := evidence.Judge(obs)
	s.hold(s.result(j))
	switch j.Verdict {
	case evidence.Pass:
		return nil
	case evidence.Fail:
		return &Violation{Reason: j.Reason}
	default:
		return fmt.Errorf("INCONCLUSIVE: %s", j.Reason)
	}
}
