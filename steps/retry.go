package steps

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/pressure"
	"github.com/gatehouse-dev/gatehouse/probe"
)

// Trying again. An attempt that only ran out of time decides nothing
// (evidence.Answered): on a starved machine a proxy that would have
// connected, or a resolver that would have forwarded, times out like a
// drop. So the undecided attempts are tried again, after a pause that
// lets the machine catch up (and measures how late the harness's own
// sleeps wake), each round with twice the time, until each answers, a
// leak is seen, or the rounds run out. Still undecided, the gate is
// INCONCLUSIVE and says why: never a PASS, nor a FAIL, for lack of time.

const (
	maxRetries = 3
	// retryPause is the first pause before a try again; it doubles each
	// round.
	retryPause = 400 * time.Millisecond
	// maxTryTimeout bounds one try's time (the probe caps it at 10 s).
	maxTryTimeout = 8 * time.Second
	// delaySample is the sleep whose lateness measures the harness delay.
	delaySample = 5 * time.Millisecond
)

// retryID is the attempt a try again repeats, and which try it is.
type retryID struct {
	id  string
	try int
}

// runSteps runs steps in s with a per-attempt timeout.
type runSteps func(ctx context.Context, s *scenario, steps []probe.Step, timeout time.Duration) error

// retryUndecided tries again, up to maxRetries rounds, the steps whose
// every report so far is a timeout without proof of a drop. leak (nil:
// never) says whether a leak is already seen, which ends the tries: the
// verdict is a FAIL whatever they would say.
func (r *runner) retryUndecided(ctx context.Context, s *scenario, steps []probe.Step, timeout time.Duration, since pressure.Mark, leak func(context.Context, *scenario) bool, run runSteps) error {
	for round := 1; round <= maxRetries; round++ {
		und := undecided(s, steps)
		if len(und) == 0 || (leak != nil && leak(ctx, s)) {
			return nil
		}
		delay, err := pauseMeasuring(ctx, retryPause<<(round-1))
		if err != nil {
			return err
		}
		timeout = min(2*timeout, maxTryTimeout)
		s.noteLoad(delay, round, timeout, since)
		if s.retryOf == nil {
			s.retryOf = map[string]retryID{}
		}
		again := make([]probe.Step, 0, len(und))
		ids := make([]string, 0, len(und))
		for _, st := range und {
			ids = append(ids, st.ID)
			orig := st.ID
			st.ID = fmt.Sprintf("%s@try%d", orig, round+1)
			s.retryOf[st.ID] = retryID{id: orig, try: round}
			again = append(again, st)
		}
		s.findings = append(s.findings, fmt.Sprintf("%d attempt(s) timed out with no answer and no kernel-side proof of a drop, tried again (round %d of %d, up to %s each, harness delay measured %s): %s",
			len(ids), round, maxRetries, timeout, delay.Round(time.Millisecond), strings.Join(ids, ", ")))
		if err := run(ctx, s, again, timeout); err != nil {
			return err
		}
		s.noteLoad(0, round, timeout, since) // the CPU wait up to the last try
	}
	return nil
}

// undecided are the steps whose reports so far are all timeouts without
// proof of a drop.
func undecided(s *scenario, steps []probe.Step) []probe.Step {
	ids := make([]string, 0, len(steps))
	for _, st := range steps {
		ids = append(ids, st.ID)
	}
	timed := map[string]bool{}
	for _, id := range evidence.TimedOut(s.session, ids, s.attempts) {
		timed[id] = true
	}
	var out []probe.Step
	for _, st := range steps {
		if timed[st.ID] {
			out = append(out, st)
		}
	}
	return out
}

// pauseMeasuring waits d in short sleeps and returns the worst lateness
// of their wake-ups: how long the machine kept the harness from running.
func pauseMeasuring(ctx context.Context, d time.Duration) (time.Duration, error) {
	var worst time.Duration
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		t0 := time.Now()
		select {
		case <-ctx.Done():
			return worst, ctx.Err()
		case <-time.After(delaySample):
		}
		worst = max(worst, time.Since(t0)-delaySample)
	}
	return worst, nil
}

// noteLoad keeps the worst delay, the tries and the kernel's CPU wait
// since the first try (the largest seen) for the verdict's reason.
func (s *scenario) noteLoad(delay time.Duration, round int, timeout time.Duration, since pressure.Mark) {
	if s.load == nil {
		s.load = &evidence.Load{}
	}
	s.load.Delay = max(s.load.Delay, delay)
	s.load.Retries = max(s.load.Retries, round)
	s.load.Longest = max(s.load.Longest, timeout)
	if stall, window, ok := pressure.Now().Since(since); ok && stall >= s.load.CPUWait {
		s.load.CPUWait, s.load.Watched, s.load.CPUKnown = stall, window, true
	}
}

// leakSeen says whether the lab already holds what makes this network
// scenario a FAIL: the verdict's own rule over the hits so far.
func (r *runner) leakSeen(_ context.Context, s *scenario) bool {
	if r.cfg.Lab == nil {
		return false
	}
	j := evidence.Judge(evidence.Observation{Session: s.session, Canary: s.canary, Hits: r.cfg.Lab.Hits(), Allowed: allowedEndpoints})
	return j.Verdict == evidence.Fail
}

// timedOut says whether the reports hold a timeout.
func timedOut(reps []probe.Report) bool {
	for _, rep := range reps {
		if rep.Outcome == probe.OutcomeTimeout {
			return true
		}
	}
	return false
}

// controlArrived says whether the allowed endpoint already heard this
// session's positive control.
func (r *runner) controlArrived(s *scenario) bool {
	return r.cfg.Lab != nil && evidence.ControlReached(r.cfg.Lab.Hits(), allowedEndpoints, s.session, s.control)
}
