package steps

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cucumber/godog"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// Endpoints a policy may let a session reach: the positive control's
// destination, the allowed host that redirects, and the resolver (a canary
// it forwards still shows up at the authority).
var allowedEndpoints = []string{"inference", "redirect", "dns-resolver"}

// allowedDestination are the endpoints serving the allowed destination
// (its API, its redirector, every other port of its address): what a
// profile's allow declaration is about.
var allowedDestination = []string{"inference", "redirect"}

// allowanceGate is the gate that judges what the allowed destination
// received: data that left for a place the policy did not mean.
const allowanceGate = "external-callback"

func registerVerdict(sc *godog.ScenarioContext, r *runner) {
	sc.Step(`^no controlled endpoint outside the policy heard from the session$`, r.judge)
}

// Violation is returned to godog so the scenario's step fails there; the
// verdict itself is in the results, and the JUnit and cucumber reports are
// written from the final results (reports.go), never from this error. The
// reason quotes what sandboxes sent, so it is redacted and escaped here too.
type Violation struct{ Reason string }

func (v *Violation) Error() string { return "FAIL: " + evidence.Redact(v.Reason) }

func (r *runner) judge(ctx context.Context) error {
	s := current(ctx)
	if s == nil || s.sess == nil {
		return errors.New("no session: a 'fresh sandbox session' step must come first")
	}
	if err := r.settleFor(ctx, s.session); err != nil {
		return err
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
		Since:     s.start,
		Takedown:  s.takedown,

		SettledArrived: settledArrived(ctx, r.lab(), s),
		FlowOf:         s.flowOf,
		FlowEmitted:    s.flowEmitted,
	}
	if s.gate == allowanceGate {
		obs.Allowance = &evidence.Allowance{Endpoints: allowedDestination, Declared: r.cfg.Allow}
	}
	var hits []evidence.Hit
	hits, obs.NotReady = r.labHits(ctx)
	x := networkObs{o: obs}
	s.observed = x
	return r.recordVerdict(s, evidence.Judge(x.with(hits)))
}

// settle waits for packets already delivered but still in an endpoint's
// queue to be recorded.
func (r *runner) settle(ctx context.Context) error {
	select {
	case <-time.After(time.Duration(r.cfg.Settle) * time.Millisecond):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// quietGap is how long the lab must stay quiet, read twice, before a
// verdict is made: a packet between the session's link and a socket's
// queue is there for microseconds.
const quietGap = 10 * time.Millisecond

// settleFor waits until the lab has recorded what these sessions sent, as
// its sockets and recorders say, and never longer than Settle (what it
// waited before, always). A lab that cannot say waits the whole Settle. A
// hit that still comes late is not lost: the verdict made then is
// provisional, and the final one (judgement.go) is made over the whole
// record once the lab is closed.
func (r *runner) settleFor(ctx context.Context, sessions ...string) error {
	q := r.lab()
	limit := time.NewTimer(time.Duration(r.cfg.Settle) * time.Millisecond)
	defer limit.Stop()
	quietRuns := 0
	for {
		quiet, _, err := q.Quiet(ctx, sessions...)
		if errors.Is(err, ErrUnsupported) {
			return r.settle(ctx) // a lab that cannot say: the whole Settle
		}
		if err != nil {
			quietRuns = -1 << 30 // cannot tell: the whole Settle
		} else if quiet {
			quietRuns++
		} else {
			quietRuns = 0
		}
		if quietRuns >= 2 {
			return nil
		}
		select {
		case <-limit.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(quietGap):
		}
	}
}

// labHits is every hit so far, and why they cannot be trusted, if so.
func (r *runner) labHits(ctx context.Context) ([]evidence.Hit, string) {
	if r.cfg.Lab == nil {
		return nil, ""
	}
	notReady := ""
	if err := r.cfg.Lab.Sealed(ctx); err != nil {
		notReady = "the lab is no longer sealed: " + err.Error()
	}
	return r.cfg.Lab.Hits(), notReady
}

// recordVerdict keeps a judgement for finish (after teardown) and tells
// godog: PASS passes, FAIL is a Violation, anything else an error.
func (r *runner) recordVerdict(s *scenario, j evidence.Judgement) error {
	// The judgement's findings stay with the scenario's own: finish
	// records them all, after the teardown's.
	s.findings = append(s.findings, j.Findings...)
	s.hold(s.result(j))
	return verdictErr(j)
}

func verdictErr(j evidence.Judgement) error {
	switch j.Verdict {
	case evidence.Pass:
		return nil
	case evidence.Fail:
		return &Violation{Reason: j.Reason}
	}
	return fmt.Errorf("INCONCLUSIVE: %s", j.Reason)
}
