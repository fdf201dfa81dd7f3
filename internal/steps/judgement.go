package steps

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab/intake"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// A scenario's verdict is made once, by judgeFinal, after the lab is
// closed: from what its judge step observed (one of the observation types
// below, one per gate family) and the lab's whole record of hits. The
// judgement at the Then step is the same function over the hits known
// then: provisional, for the progress output and godog's step only.

// observation is what a judge step saw of its scenario besides the hits.
type observation interface{ observed() }

// networkObs: the network gates (evidence.Judge).
type networkObs struct{ o evidence.Observation }

// exchangeObs: two sessions at once, foreign-storage and cross-session
// (evidence.JudgeExchange).
type exchangeObs struct{ o evidence.ExchangeObservation }

// secretsObs: long-lived-secret (evidence.JudgeSecrets).
type secretsObs struct{ o evidence.SecretsObservation }

// persistObs: reusable-state (evidence.JudgePersistence).
type persistObs struct{ o evidence.PersistObservation }

// hostObs: host-access (evidence.JudgeHost).
type hostObs struct{ o evidence.HostObservation }

// stopObs: stop-signal (evidence.JudgeStop). The hits decide each run's
// late heartbeats and the positive control.
type stopObs struct {
	session, control string
	limit            time.Duration
	stops            []time.Time
	tags             []string
	runs             []evidence.StopRun
	notReady         string
}

// rehearsalObs: the report-triage rehearsal. Its intake's store is part
// of the record, like the hits: read when the verdict is made.
type rehearsalObs struct {
	net     evidence.Observation
	rh      *Rehearsal
	store   interface{ All() []intake.Entry } // the intake's (*intake.Store)
	orig    []TreeChange
	copyCut string
}

func (networkObs) observed()   {}
func (exchangeObs) observed()  {}
func (secretsObs) observed()   {}
func (persistObs) observed()   {}
func (hostObs) observed()      {}
func (stopObs) observed()      {}
func (rehearsalObs) observed() {}

// The observations with hits: what the evidence functions take. Whether
// the lab was sealed when the step read it (NotReady) is part of what was
// observed and stays: hits read from a lab that was not sealed support no
// PASS, however many more arrive.

func (x networkObs) with(hits []evidence.Hit) evidence.Observation {
	o := x.o
	o.Hits = hits
	return o
}

func (x exchangeObs) with(hits []evidence.Hit) evidence.ExchangeObservation {
	o := x.o
	o.Hits = hits
	return o
}

func (x secretsObs) with(hits []evidence.Hit) evidence.SecretsObservation {
	o := x.o
	o.Hits = hits
	return o
}

func (x persistObs) with(hits []evidence.Hit) evidence.PersistObservation {
	o := x.o
	o.Hits = hits
	return o
}

func (x hostObs) with(hits []evidence.Hit) evidence.HostObservation {
	o := x.o
	o.Hits = hits
	return o
}

func (x stopObs) with(hits []evidence.Hit) evidence.StopObservation {
	o := evidence.StopObservation{Limit: x.limit, Stops: x.stops, Interval: wire.HeartbeatEvery, NotReady: x.notReady}
	for i, run := range x.runs {
		run.Late = lateBeats(hits, run.Session, x.tags[i], x.stops[i])
		o.Runs = append(o.Runs, run)
	}
	o.Control = evidence.ControlReached(hits, allowedEndpoints, x.session, x.control)
	return o
}

// judge is the network judgement with the rehearsal's own checks.
func (x rehearsalObs) judge(hits []evidence.Hit) evidence.Judgement {
	o := x.net
	o.Hits = hits
	return x.rh.judge(evidence.Judge(o), x.store.All(), x.orig, x.copyCut, o.Session, hits)
}

// judgeFinal makes a scenario's judgement from what its judge step
// observed and hits.
func judgeFinal(obs observation, hits []evidence.Hit) (evidence.Judgement, []evidence.Crossing) {
	switch x := obs.(type) {
	case networkObs:
		return evidence.Judge(x.with(hits)), nil
	case exchangeObs:
		return evidence.JudgeExchange(x.with(hits))
	case secretsObs:
		return evidence.JudgeSecrets(x.with(hits)).Judgement, nil
	case persistObs:
		j, cross, _ := evidence.JudgePersistence(x.with(hits))
		return j, cross
	case hostObs:
		return evidence.JudgeHost(x.with(hits)).Judgement, nil
	case stopObs:
		j, _ := evidence.JudgeStop(x.with(hits))
		return j, nil
	case rehearsalObs:
		return x.judge(hits), nil
	}
	return evidence.Judgement{Verdict: evidence.Inconclusive, Reason: fmt.Sprintf("no rule judges a %T", obs)}, nil
}

// closing is what finish adds to any verdict once the scenario is torn
// down; the final judgement adds it again to the verdict it makes.
type closing struct {
	agentNote string // prefixed to an INCONCLUSIVE: the agent stopped its own attempts
	responded bool   // a response (--respond) acted on the session
	leftover  string // what the teardown may have left behind
}

func (c closing) apply(res *evidence.Result) {
	if c.agentNote != "" && res.Verdict == evidence.Inconclusive {
		res.Reason = c.agentNote + res.Reason
	}
	if c.responded && res.Verdict == evidence.Inconclusive {
		res.Reason = "the response (--respond) acted on the session before every attempt had been tried to the end: " + res.Reason
	}
	// A FAIL stands: it rests on proof from outside that the teardown
	// cannot undo.
	if c.leftover != "" && res.Verdict == evidence.Pass {
		res.Verdict = evidence.Inconclusive
		res.Reason = "the teardown left something behind (" + c.leftover + "); the pass was: " + res.Reason
	}
}

// judged is what the run keeps of a scenario for its final judgement.
type judged struct {
	obs         observation
	closing     closing
	provisional evidence.Result // as finish recorded it
}

// final makes the scenario's one verdict over hits, the lab's whole
// record: the provisional result with the judgement's verdict, reason,
// violating hits and crossings, and the closing added again. A verdict
// other than the provisional one says what that was.
func (v judged) final(hits []evidence.Hit) evidence.Result {
	p := v.provisional
	j, cross := judgeFinal(v.obs, hits)
	res := p
	res.Verdict, res.Reason, res.Control = j.Verdict, j.Reason, j.Control
	res.Hits, res.Crossings = j.Violating, cross
	res.Findings = slices.Clone(p.Findings)
	for _, f := range j.Findings {
		if !slices.Contains(res.Findings, f) {
			res.Findings = append(res.Findings, f)
		}
	}
	v.closing.apply(&res)
	if res.Verdict != p.Verdict {
		res.Reason = fmt.Sprintf("%s (changed from %s when the run's whole record was judged: %s)", res.Reason, p.Verdict, p.Reason)
	}
	return res
}

// Judge makes every scenario's verdict over hits, the lab's whole record
// once it is closed (late packets, peers' and unattributed hits carrying a
// canary, broker uses count): each from its observation, once, replacing
// the provisional one. A scenario that left no observation (it stopped
// before its judge step) keeps its INCONCLUSIVE. Judging the same record
// again gives the same results. It returns how many verdicts changed.
func (o *Outcome) Judge(hits []evidence.Hit) int {
	n := 0
	for i := range o.Results {
		res := &o.Results[i]
		v, ok := o.judged[res.Session+"/"+res.Gate]
		if !ok {
			continue
		}
		final := v.final(hits)
		if final.Verdict != res.Verdict {
			n++
		}
		*res = final
	}
	return n
}

// watch waits, after a verdict that is not a FAIL, as long as the settle
// before it, while the sessions are still up: a packet still in flight
// arrives while the session can still be named by its address, so the
// final judgement finds it attributed. It judges nothing.
func (r *runner) watch(ctx context.Context, s *scenario) {
	if s.observed == nil || s.held == nil || s.held.Verdict == evidence.Fail || r.cfg.Lab == nil {
		return
	}
	select {
	case <-time.After(time.Duration(r.cfg.Settle) * time.Millisecond):
	case <-ctx.Done():
	}
}
