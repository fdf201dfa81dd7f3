package steps

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// rejudge makes a scenario's judgement again from a given set of hits,
// with everything else as it was when the verdict was first made.
type rejudge func(hits []evidence.Hit) (evidence.Judgement, []evidence.Crossing)

// watch keeps watching the endpoints a moment after the verdict, before the
// sessions are torn down, and re-judges the held verdict with what arrived
// meanwhile; only a stricter verdict replaces it.
func (r *runner) watch(ctx context.Context, s *scenario) {
	if s.rejudge == nil || s.held == nil || s.held.Verdict == evidence.Fail || r.cfg.Lab == nil {
		return
	}
	// As long as the settle before the verdict: a packet still in flight
	// arrives while the session can still be named by its address.
	select {
	case <-time.After(time.Duration(r.cfg.Settle) * time.Millisecond):
	case <-ctx.Done():
		return
	}
	j, cross := s.rejudge(r.cfg.Lab.Hits())
	if stricter(j.Verdict, s.held.Verdict) {
		apply(s.held, j, cross, "after the verdict, while the session was still watched")
	}
}

// Rejudge runs every scenario's judgement again over hits, the complete
// record once the lab is closed: late packets, peers' and unattributed
// hits carrying a canary, broker uses. A verdict only ever gets stricter.
// It returns how many verdicts changed.
func (o *Outcome) Rejudge(hits []evidence.Hit) int {
	n := 0
	for i := range o.Results {
		res := &o.Results[i]
		f := o.rejudges[res.Session+"/"+res.Gate]
		if f == nil || res.Verdict == evidence.Fail {
			continue
		}
		j, cross := f(hits)
		if stricter(j.Verdict, res.Verdict) {
			apply(res, j, cross, "when the run's whole record was judged again")
			n++
		}
	}
	return n
}

// stricter orders FAIL over INCONCLUSIVE over PASS.
func stricter(a, b evidence.Verdict) bool {
	rank := func(v evidence.Verdict) int {
		switch v {
		case evidence.Fail:
			return 2
		case evidence.Pass:
			return 0
		}
		return 1
	}
	return rank(a) > rank(b)
}

func apply(res *evidence.Result, j evidence.Judgement, cross []evidence.Crossing, when string) {
	res.Reason = fmt.Sprintf("%s (changed from %s %s: %s)", j.Reason, res.Verdict, when, res.Reason)
	res.Verdict = j.Verdict
	res.Hits = j.Violating
	for _, f := range j.Findings {
		if !slices.Contains(res.Findings, f) {
			res.Findings = append(res.Findings, f)
		}
	}
	if len(cross) > 0 {
		res.Crossings = cross
	}
}
