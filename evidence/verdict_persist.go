package evidence

import (
	"fmt"
	"strings"
)

// PersistPlace is one place the reusable-state gate has each session write
// its value to and the later session search.
type PersistPlace struct {
	Name   string // the table's row, or "mount:POINT" for a writable mount
	Stash  string // the attempt ID of each session's write there
	Search string // the attempt ID of the later session's search of it
}

// PersistObservation is what the reusable-state verdict is made from: two
// sessions of one profile, one after the other. The earlier wrote its
// value into every place that might outlive it and was torn down; the
// later wrote its own value into the same places (the positive control of
// each search) and searched them, and every mount point it could read.
type PersistObservation struct {
	Earlier, Later Party // Value: each session's value; only the later's Control counts
	Places         []PersistPlace
	// Everywhere is the attempt ID of the later session's search of every
	// mount point ("" when none was asked).
	Everywhere string
	Attempts   []Attempt // both sessions'
	Sightings  []Sighting
	// Gone says the earlier session was stopped, reaped and shown to have
	// no process left before the later one started; GoneProblem says why
	// not, when it was not.
	Gone        bool
	GoneProblem string
	Hits        []Hit
	Allowed     []string
	NotReady    string
}

// PersistCoverage says, place by place, what the later session's search
// there proved.
type PersistCoverage struct {
	Searched   []string // its own value seen there: the search sees the place
	Unwritable []string // neither session could write there: nothing could be left
	Problems   []string // why a place is not covered
	Refused    []string // places the probe itself would not write (kernel interfaces)
}

// JudgePersistence applies the reusable-state gate's rules:
//   - FAIL when the later session reported the earlier session's value,
//     anywhere (the proof: the value, where, and the later session);
//   - PASS only when every place is covered (the later session found its
//     own value there, or neither session could write there), the search of
//     every mount point ran to its end and found the later session's own
//     value too, the earlier session was shown to be gone before the later
//     started, and the later session's positive control reached an allowed
//     endpoint;
//   - INCONCLUSIVE otherwise: a search that cannot be shown to see a place
//     proves nothing about what is there.
func JudgePersistence(o PersistObservation) (Judgement, []Crossing, PersistCoverage) {
	var j Judgement
	var cross []Crossing
	own := map[string]bool{} // attempt IDs where the later saw its own value
	for _, s := range o.Sightings {
		if s.Session != o.Later.Session {
			continue
		}
		switch s.Value {
		case o.Earlier.Value:
			cross = append(cross, Crossing{Owner: o.Earlier.Session, SeenBy: s.Session, Attempt: s.Attempt, Where: s.Where, Value: s.Value})
		case o.Later.Value:
			own[s.Attempt] = true
		}
	}
	j.Control = ControlReached(o.Hits, o.Allowed, o.Later.Session, o.Later.Control)
	if o.Earlier.Value == "" || o.Later.Value == "" || o.Earlier.Value == o.Later.Value {
		j.Verdict, j.Reason = Inconclusive, "the two sessions need two distinct values"
		return j, nil, PersistCoverage{}
	}
	if len(cross) > 0 {
		j.Verdict = Fail
		j.Reason = describeCrossings(cross) + fmt.Sprintf(" after %s was stopped and torn down", o.Earlier.Session)
		if !o.Gone {
			j.Reason += " (its teardown was not confirmed: " + o.GoneProblem + ")"
		}
		return j, cross, PersistCoverage{}
	}
	byID := map[string]map[string]Attempt{} // session -> ID -> attempt
	for _, a := range o.Attempts {
		if byID[a.Session] == nil {
			byID[a.Session] = map[string]Attempt{}
		}
		byID[a.Session][a.ID] = a
	}
	var cov PersistCoverage
	wrote := func(session, id string) (bool, string) {
		a, ok := byID[session][id]
		switch {
		case !ok:
			return false, "no report"
		case a.Outcome == "completed":
			return true, ""
		case strings.HasPrefix(a.Error, "probe refuses"):
			return false, "refused"
		case FileAttemptCut(a):
			return false, "cut"
		}
		return false, a.Outcome
	}
	for _, p := range o.Places {
		ew, eWhy := wrote(o.Earlier.Session, p.Stash)
		lw, lWhy := wrote(o.Later.Session, p.Stash)
		search, searched := byID[o.Later.Session][p.Search]
		switch {
		case eWhy == "no report" || lWhy == "no report":
			cov.Problems = append(cov.Problems, p.Name+": a write there has no report")
		case eWhy == "cut" || lWhy == "cut":
			// Neither unwritable nor written: the kernel never answered.
			a := byID[o.Earlier.Session][p.Stash]
			if lWhy == "cut" {
				a = byID[o.Later.Session][p.Stash]
			}
			cov.Problems = append(cov.Problems, fmt.Sprintf("%s: a write there did not finish (%s)", p.Name, a.Outcome))
		case eWhy == "refused" || lWhy == "refused":
			cov.Refused = append(cov.Refused, p.Name)
		case !searched || !AttemptOnRecord(search):
			what := "no report"
			if searched {
				what = search.Outcome
			}
			cov.Problems = append(cov.Problems, fmt.Sprintf("%s: the search there is not on record (%s)", p.Name, what))
		case lw && !own[p.Search]:
			cov.Problems = append(cov.Problems, p.Name+": the later session's search did not find the value it wrote there itself (a blind search proves nothing)")
		case ew && !lw:
			cov.Problems = append(cov.Problems, fmt.Sprintf("%s: the earlier session wrote there but the later could not (%s), so its search cannot be shown to see the place", p.Name, lWhy))
		case !ew && !lw:
			cov.Unwritable = append(cov.Unwritable, p.Name)
		default:
			cov.Searched = append(cov.Searched, p.Name)
		}
	}
	if o.Everywhere != "" {
		a, ok := byID[o.Later.Session][o.Everywhere]
		switch {
		case !ok || !AttemptOnRecord(a):
			what := "no report"
			if ok {
				what = a.Outcome
			}
			cov.Problems = append(cov.Problems, fmt.Sprintf("the search of every mount point is not on record (%s)", what))
		case len(cov.Searched) > 0 && !own[o.Everywhere]:
			cov.Problems = append(cov.Problems, "the search of every mount point did not find the later session's own value")
		}
	}
	switch {
	case o.NotReady != "":
		j.Verdict, j.Reason = Inconclusive, "endpoints not ready: "+o.NotReady
	case !o.Gone:
		j.Verdict, j.Reason = Inconclusive, fmt.Sprintf("%s was not shown to be gone before %s started: %s", o.Earlier.Session, o.Later.Session, o.GoneProblem)
	case len(o.Places) == 0:
		j.Verdict, j.Reason = Inconclusive, "no place was planned"
	case len(cov.Searched) == 0:
		j.Verdict, j.Reason = Inconclusive, "no place was both written and shown to be searched: "+strings.Join(cov.Problems, "; ")
	case len(cov.Problems) > 0:
		j.Verdict, j.Reason = Inconclusive, strings.Join(cov.Problems, "; ")
	case !j.Control:
		j.Verdict, j.Reason = Inconclusive, "positive control failed in "+o.Later.Session
	default:
		j.Verdict = Pass
		j.Reason = fmt.Sprintf("%s found none of %s's values after it was torn down: %d place(s) searched, each showing %s's own value",
			o.Later.Session, o.Earlier.Session, len(cov.Searched), o.Later.Session)
		if len(cov.Unwritable) > 0 {
			j.Reason += fmt.Sprintf(", %d writable by neither (%s)", len(cov.Unwritable), strings.Join(cov.Unwritable, ", "))
		}
		if o.Everywhere != "" {
			j.Reason += ", and every mount point searched to the end"
		}
		j.Reason += "; positive control worked"
	}
	for _, r := range cov.Refused {
		j.Findings = append(j.Findings, "not tested: "+r+" (the probe will not write a kernel interface)")
	}
	return j, nil, cov
}
