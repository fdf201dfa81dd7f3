package steps

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// party is one session of a two-session gate and what it did.
type party struct {
	s       *scenario
	planned []string
	reports []wire.Report
	from    time.Time // when its probe was started, seen from outside
	to      time.Time // when it returned
	// acts are when its attempts were at work, by the probe's word, each
	// with the outside window of its probe; live is when its holder was
	// alive (see holdAll). The overlap rule is judged from both.
	acts []evidence.Activity
	live evidence.Window
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
// party's window and its attempts' active windows; every plan is built
// before any starts.
func (r *runner) runAll(ctx context.Context, parties []*party, step string, plans []wire.Plan, limit time.Duration) error {
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
			pt.acts = append(pt.acts, activities(pt.s.session, reps, evidence.Window{From: from, To: to})...)
			r.traceWindow(pt, step, from, to)
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

// traceWindow writes one window to traces/session-windows.jsonl, so the
// trace shows when each session's probe and holder ran.
func (r *runner) traceWindow(pt *party, step string, from, to time.Time) {
	if r.cfg.Folder != nil {
		_ = r.cfg.Folder.AppendJSONL(evidence.SessionWindowsTrace, window{
			Scenario: pt.s.gate + "/" + string(pt.s.path), Session: pt.s.session, Step: step, Start: from.UTC(), End: to.UTC(),
		})
	}
}

// activities are the overlap rule's view of a probe run's reports: a send
// or receive pairs with the other session's on the same channel (the ID
// after "send-" or "receive-"); a find or read is a search.
func activities(session string, reps []wire.Report, outside evidence.Window) []evidence.Activity {
	var out []evidence.Activity
	for _, rep := range reps {
		a := evidence.Activity{Session: session, Attempt: rep.ID, Outside: outside,
			Claimed: evidence.Window{From: rep.ActiveFrom, To: rep.ActiveTo}}
		switch rep.Kind {
		case wire.KindSend:
			a.Role, a.Channel = evidence.RoleSend, strings.TrimPrefix(rep.ID, "send-")
		case wire.KindReceive:
			a.Role, a.Channel = evidence.RoleReceive, strings.TrimPrefix(rep.ID, "receive-")
		case wire.KindFind, wire.KindRead:
			a.Role = evidence.RoleSearch
		default:
			continue
		}
		out = append(out, a)
	}
	return out
}

// sightings turns the parties' reports into the values each reported.
func sightings(ps []*party) []evidence.Sighting {
	var out []evidence.Sighting
	for _, pt := range ps {
		for _, rep := range pt.reports {
			for _, line := range splitLines(rep.Excerpt) {
				for _, v := range wire.Tokens([]byte(line)) {
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
