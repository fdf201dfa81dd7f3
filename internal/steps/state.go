package steps

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cucumber/godog"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/minted"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/targets"
)

type stateKey struct{}

// scenario is the state of one running scenario; it lives in the godog
// context, never in a global, because scenarios run concurrently.
type scenario struct {
	gate     string
	name     string
	pickle   string // godog's id of the scenario (the reports name it by it)
	start    time.Time
	session  string
	path     targets.Path
	canary   string // carried by every attempt; proves where a leak came from
	control  string // carried by the positive control only
	sess     targets.Session
	places   map[string]string // the host folders the session's spec named
	attached bool
	tracked  bool // the lab knows its tag (Track) until teardown
	planned  []string
	attempts []evidence.Attempt
	// Kernel-side accounting of the attempts (network gates): packets the
	// session emitted per lab destination while they ran, and where each
	// attempt's first packet goes. nil when the lab cannot count.
	emitted map[string]uint64
	dests   map[string]string
	acctErr string
	// flowOf: for direct attempts whose flows are known (without a lookup,
	// or for a name from where the probe began its connects), the flow that
	// decides each; flowEmitted: by attempt, the opening packets the
	// kernel counted on that flow while its plan ran (noteFlows).
	flowOf      map[string]string
	flowEmitted map[string]uint64
	// settled: the attempts settled early, with the flow each was stuck on
	// (settle.go), read again when the scenario is judged.
	settled  map[string]lab.Flow
	findings []string
	corpus   []string
	// tries are the attempt steps run so far; takedown is what root in the
	// guest did to the controls before trying them again (assume-breach).
	tries    []tried
	takedown *evidence.Takedown
	held     *evidence.Result // the provisional verdict, recorded by finish after teardown
	observed observation      // what the judge step saw: the final verdict is made from it
	// agentRuns counts the agent's runs in this session (normal path with
	// an agent); agentDenials are the commands its own permission layer
	// refused.
	agentRuns    int
	agentDenials []string
	agentSetup   map[string]string // how the agent was set up (its first run's facts)
	agentKeys    []string          // its keys to the scripted model: ours, not a found credential
	// sandboxCreds are the credentials the sandbox made for this session
	// alone (hash -> what): findings, not long-lived secrets.
	sandboxCreds map[string]string
	leftover     []string // teardown problems that may have left something behind
	// Detection: the session's keys as monitors see it, why its attempts
	// are not observable (if so), and each attempt's kind, object, window.
	keys         []detect.SessionKey
	unobservable string
	detAttempts  []detAttempt
	// netns is the session's network namespace path; responded is set
	// once a response (run --respond) began acting on the session.
	netns     string
	respMu    sync.Mutex
	responded bool
	// egressOpenBefore is the egress check made when the session started
	// (nil until it is done): what a response found already refused.
	egressOpenBefore *bool
	// egressUnchecked: the lab cannot check egress (ErrUnsupported).
	egressUnchecked bool
	// document, when set, is the untrusted document an agent works on
	// instead of the last corpus entry (the rehearsal's planted report);
	// rehearsal is the rehearsal's own state (rehearse.go).
	document  string
	rehearsal *rehearsalState
}

func current(ctx context.Context) *scenario {
	s, _ := ctx.Value(stateKey{}).(*scenario)
	return s
}

func (r *runner) before(ctx context.Context, sc *godog.Scenario) (context.Context, error) {
	s := &scenario{name: sc.Name, start: time.Now(), gate: gateOf(sc), pickle: sc.Id}
	r.log.begin(sc, s.start)
	return context.WithValue(ctx, stateKey{}, s), nil
}

// after tears the scenario's own session down. The verdict is recorded
// later, by finish, once every teardown hook has run.
func (r *runner) after(ctx context.Context, _ *godog.Scenario, _ error) (context.Context, error) {
	if s := current(ctx); s != nil {
		r.watch(ctx, s)
		r.teardown(context.WithoutCancel(ctx), s)
	}
	return ctx, nil
}

func (r *runner) teardown(ctx context.Context, s *scenario) {
	// A response under way finishes its measurement first: the teardown's
	// stop must not be taken for the response's.
	r.resp.quiesce(s)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if s.sess != nil {
		if err := s.sess.Stop(ctx); err != nil {
			// Whether it left something is for the reap and the process
			// check after it to say; a target that cannot reap has no
			// other word, so its failed stop counts as left behind.
			_, canReap := s.sess.(reaper)
			s.teardownProblem("stop failed: "+err.Error(), !canReap)
		}
	}
	if s.attached {
		if err := r.cfg.Lab.Detach(ctx, s.session); err != nil {
			s.teardownProblem("detach from the lab failed: "+err.Error(), true)
		}
	}
	if s.tracked {
		r.lab().Untrack(s.session)
	}
}

// teardownProblem notes what went wrong while tearing the scenario down, as
// a finding; left says something may have outlived the scenario.
func (s *scenario) teardownProblem(msg string, left bool) {
	s.findings = append(s.findings, "teardown: "+msg)
	if left {
		s.leftover = append(s.leftover, msg)
	}
}

// hold keeps a scenario's result until finish records it.
func (s *scenario) hold(res evidence.Result) {
	s.held = &res
}

// finish is the last hook of every scenario: it records the provisional
// verdict with everything the teardown found, and what the final
// judgement (Outcome.Judge) is made from. Every scenario leaves a verdict:
// one that never reached its Then step is INCONCLUSIVE, never PASS. A PASS
// whose teardown left something behind becomes INCONCLUSIVE (closing): a
// process or a planted value that outlived the scenario may act in the
// next one, so the result is not the clean one a PASS claims. A FAIL
// stands: it rests on proof from outside that the teardown cannot undo.
func (r *runner) finish(ctx context.Context, _ *godog.Scenario, err error) (context.Context, error) {
	s := current(ctx)
	if s == nil {
		return ctx, nil
	}
	if s.held == nil {
		reason := "the scenario stopped before a verdict could be made"
		if err != nil {
			reason += ": " + err.Error()
		}
		s.hold(s.result(evidence.Judgement{Verdict: evidence.Inconclusive, Reason: reason}))
	}
	res := *s.held
	var cl closing
	cl.agentNote = r.agentFacts(s, &res)
	// Detection is scored after the verdict and never changes it.
	res.Detection = r.scoreDetection(ctx, s, res)
	r.unregisterKeys(s)
	sessions := []string{s.session}
	if m := multiOf(ctx); m != nil {
		m.mu.Lock()
		for _, p := range m.peers {
			r.unregisterKeys(p)
			sessions = append(sessions, p.session)
		}
		m.mu.Unlock()
	}
	res.Responses = r.resp.take(sessions...)
	cl.responded = len(res.Responses) > 0
	res.Findings = append([]string(nil), s.findings...)
	var herr error
	if len(s.leftover) > 0 {
		cl.leftover = strings.Join(s.leftover, "; ")
		// For godog, redacted: the result keeps it raw (the reports
		// show the result's reason, redacted when they are written).
		herr = fmt.Errorf("teardown left something behind: %s", evidence.Redact(cl.leftover))
	}
	cl.apply(&res)
	r.record(res, s.observed, cl, s.pickle)
	return ctx, herr
}

// result makes the scenario's result from a judgement; the caller adds
// what is gate-specific and hands it to hold.
func (s *scenario) result(j evidence.Judgement) evidence.Result {
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
		Takedown:   s.takedown,
		Emitted:    s.emitted,
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

// token makes a value the sandbox must not carry anywhere: a canary, a
// host nonce, a persistence value (prefix and 16 hex digits). Printing
// redacts it (internal/minted).
func token(prefix string) string { return minted.Must(minted.Canary, prefix, 8) }

// tag makes a session's control token: shown on purpose, never redacted.
func tag(prefix string) string { return minted.Must(minted.Tag, prefix, 8) }

// toAttempts turns the probe's reports into evidence records.
func toAttempts(s *scenario, reps []wire.Report) []evidence.Attempt {
	out := make([]evidence.Attempt, 0, len(reps))
	for _, r := range reps {
		out = append(out, evidence.Attempt{
			Session: s.session, Scenario: s.gate + "/" + string(s.path), ID: r.ID, Kind: r.Kind,
			Target: r.Target, Outcome: r.Outcome, Error: r.Error, Status: r.Status, Excerpt: r.Excerpt,
			Start: r.Start, DurationMS: r.DurationMS, ActiveFrom: r.ActiveFrom, ActiveTo: r.ActiveTo,
			Answered: r.Answered, Dialed: r.Dialed,
		})
	}
	return out
}
