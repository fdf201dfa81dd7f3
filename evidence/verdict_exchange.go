package evidence

import (
	"fmt"
	"sort"
	"strings"
)

// Party is one session of a two-session gate (foreign-storage,
// cross-session) and what it must keep to itself.
type Party struct {
	Session string
	Value   string   // its storage nonce or channel value
	Control string   // token its positive control carries
	Planned []string // attempt IDs it was asked to make
}

// Sighting is a value a session's probe reported, with where it came from.
type Sighting struct {
	Session string // the reporter
	Attempt string
	Where   string
	Value   string
}

// ExchangeObservation is what a two-session verdict is made from.
type ExchangeObservation struct {
	Parties   []Party
	Sightings []Sighting
	Attempts  []Attempt
	Hits      []Hit
	Allowed   []string // endpoints a positive control may reach
	// OwnValue, when set, requires each party to have seen its own value
	// (its own storage is readable): without it, not seeing the other's
	// proves nothing.
	OwnValue bool
	// Overlap, when set, requires the sessions to have really run at the
	// same time, judged by CheckOverlap from Timing: what the probes say
	// they were doing when, bounded by what the harness saw from outside.
	Overlap  bool
	Timing   Timing
	NotReady string
}

// JudgeExchange applies the fail-closed rules of the two-session gates:
//   - FAIL when a party reported another party's value (a Crossing);
//   - PASS only when every planned attempt of every party is on record,
//     no value crossed, every party's positive control reached an allowed
//     endpoint, and (when asked) each saw its own value and the sessions
//     were shown to run at the same time (CheckOverlap);
//   - INCONCLUSIVE otherwise: sessions that missed each other (a slow
//     start, a loaded runner) prove nothing about what could have crossed.
func JudgeExchange(o ExchangeObservation) (Judgement, []Crossing) {
	var j Judgement
	owner := map[string]string{}
	for _, p := range o.Parties {
		if p.Value != "" {
			owner[p.Value] = p.Session
		}
	}
	var cross []Crossing
	own := map[string]bool{}
	for _, s := range o.Sightings {
		who, ok := owner[s.Value]
		switch {
		case !ok:
		case who == s.Session:
			own[who] = true
		default:
			cross = append(cross, Crossing{Owner: who, SeenBy: s.Session, Attempt: s.Attempt, Where: s.Where, Value: s.Value})
		}
	}
	// What the control did is recorded whatever the verdict: a FAIL needs
	// no control, but must not report one that worked as failed.
	j.Control = len(o.Parties) > 0
	for _, p := range o.Parties {
		j.Control = j.Control && ControlReached(o.Hits, o.Allowed, p.Session, p.Control)
	}
	if len(cross) > 0 {
		j.Verdict, j.Reason = Fail, describeCrossings(cross)
		return j, cross
	}
	// Where the overlap rule is in force, a send that ran out its time is
	// on record: the rule proves the other session listened on the same
	// channel through the send's own window, so a value that could cross
	// would have been heard there (a timed-out send with no window fails
	// the rule instead).
	onRecord := AttemptOnRecord
	if o.Overlap {
		onRecord = func(a Attempt) bool {
			return AttemptOnRecord(a) || (a.Kind == "send" && a.Outcome == "timeout")
		}
	}
	var problems []string
	for _, p := range o.Parties {
		if m := missing(p.Session, p.Planned, o.Attempts, onRecord); len(m) > 0 {
			problems = append(problems, fmt.Sprintf("no proof of attempt for %s in %s", strings.Join(m, ", "), p.Session))
		}
		if len(p.Planned) == 0 {
			problems = append(problems, "no attempt was planned in "+p.Session)
		}
		if !ControlReached(o.Hits, o.Allowed, p.Session, p.Control) {
			problems = append(problems, "positive control failed in "+p.Session)
		}
		if o.OwnValue && !own[p.Session] {
			problems = append(problems, p.Session+" could not read its own storage, so not reading another's proves nothing")
		}
	}
	var ov Overlap
	if o.Overlap {
		ov = CheckOverlap(o.Parties, o.Timing)
	}
	switch {
	case o.NotReady != "":
		j.Verdict, j.Reason = Inconclusive, "endpoints not ready: "+o.NotReady
	case len(o.Parties) < 2:
		j.Verdict, j.Reason = Inconclusive, "a two-session gate needs two sessions"
	case o.Overlap && !ov.OK():
		j.Verdict, j.Reason = Inconclusive, ov.Reason()
	case len(problems) > 0:
		j.Verdict, j.Reason = Inconclusive, strings.Join(problems, "; ")
	default:
		n := 0
		for _, p := range o.Parties {
			n += len(p.Planned)
		}
		j.Verdict = Pass
		j.Reason = fmt.Sprintf("%d attempts on record across %d sessions, no session reported another's value, positive control worked in each", n, len(o.Parties))
		if o.Overlap {
			j.Reason += "; " + ov.Summary()
		}
	}
	return j, nil
}

// ControlReached is the positive-control rule every gate uses: an allowed
// endpoint heard this session's own control token. The probe's report of
// the control never counts.
func ControlReached(hits []Hit, allowed []string, session, control string) bool {
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	for _, h := range hits {
		if control != "" && h.Session == session && ok[h.Endpoint] && carries(h, control) {
			return true
		}
	}
	return false
}

func describeCrossings(cs []Crossing) string {
	by := map[string][]string{}
	for _, c := range cs {
		k := c.Owner + "'s value reached " + c.SeenBy
		by[k] = append(by[k], c.Attempt+" ("+c.Where+")")
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+" through "+strings.Join(by[k], ", "))
	}
	return fmt.Sprintf("%d crossing(s): %s", len(cs), strings.Join(parts, "; "))
}
