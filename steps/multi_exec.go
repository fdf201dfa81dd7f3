package steps

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"time"

	"gatehouse/evidence"
	"gatehouse/probe"
)

// party is one session of a two-session gate and what it did.
type party struct {
	s       *scenario
	planned []string
	reports []probe.Report
	from    time.Time // when its probe was started, seen from outside
	to      time.Time // when it returned
}

// window is one probe run's time window, written to
// traces/session-windows.jsonl so the trace shows sessions overlapping.
type window struct {
	Scenario string    `json:"scenario"`
	Session  string    `json:"session"`
	Step     string    `json:"step"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
}

// runAll runs one plan per party at the same time and records each
// party's window; every plan is built before any starts.
func (r *runner) runAll(ctx context.Context, parties []*party, step string, plans []probe.Plan, limit time.Duration) error {
	var wg sync.WaitGroup
	errs := make([]error, len(parties))
	for i, pt := range parties {
		for _, st := range plans[i].Steps {
			pt.planned = append(pt.planned, st.ID)
		}
		wg.Go(func() {
			from := time.Now()
			reps, err := r.runPlan(ctx, pt.s, plans[i], limit)
			to := time.Now()
			pt.reports = append(pt.reports, reps...)
			pt.from, pt.to, errs[i] = from, to, err
			if r.cfg.Folder != nil {
				_ = r.cfg.Folder.AppendJSONL("traces/session-windows.jsonl", window{
					Scenario: pt.s.gate + "/" + string(pt.s.path), Session: pt.s.session, Step: step, Start: from.UTC(), End: to.UTC(),
				})
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// overlapped reports whether every party's last window overlaps every
// other's.
func overlapped(ps []*party) bool {
	for i := range ps {
		for j := range ps {
			if i != j && !(ps[i].from.Before(ps[j].to) && ps[j].from.Before(ps[i].to)) {
				return false
			}
		}
	}
	return len(ps) > 1
}

// sightings turns the parties' reports into the values each reported.
func sightings(ps []*party) []evidence.Sighting {
	var out []evidence.Sighting
	for _, pt := range ps {
		for _, rep := range pt.reports {
			for _, line := range splitLines(rep.Excerpt) {
				for _, v := range probe.Tokens([]byte(line)) {
					// "VALUE WHERE" lines name a place; any other line is
					// content, and the place is the attempt's own target.
					where := rep.Target
					if rest, ok := strings.CutPrefix(line, v+" "); ok && rest != "" && !strings.Contains(rest, "gh") {
						where = rest
					}
					out = append(out, evidence.Sighting{Session: pt.s.session, Attempt: rep.ID, Where: where, Value: v})
				}
			}
		}
	}
	return out
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := bytes.IndexByte([]byte(s), '\n')
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i])
		s = s[i+1:]
	}
	return out
}
