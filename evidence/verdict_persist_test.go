package evidence

import (
	"strings"
	"testing"
)

// persistCase is a reusable-state observation where everything went right:
// two places, each written by both sessions and searched by the later one,
// which saw its own value in each and in its search of every mount point.
func persistCase() PersistObservation {
	places := []PersistPlace{
		{Name: "tmp", Stash: "stash-tmp", Search: "search-tmp"},
		{Name: "home-cache", Stash: "stash-home-cache", Search: "search-home-cache"},
	}
	o := PersistObservation{
		Earlier:    Party{Session: "s1", Value: "ghst0000000000000001"},
		Later:      Party{Session: "s2", Value: "ghst0000000000000002", Control: "ctl2"},
		Places:     places,
		Everywhere: "search-everywhere",
		Gone:       true,
		Allowed:    []string{"inference"},
		Hits:       []Hit{{Endpoint: "inference", Session: "s2", Summary: "POST /v1/complete?control=ctl2"}},
	}
	for _, p := range places {
		o.Attempts = append(o.Attempts,
			Attempt{Session: "s1", ID: p.Stash, Kind: "stash", Outcome: "completed"},
			Attempt{Session: "s2", ID: p.Stash, Kind: "stash", Outcome: "completed"},
			Attempt{Session: "s2", ID: p.Search, Kind: "find", Outcome: "completed"})
		o.Sightings = append(o.Sightings, Sighting{Session: "s2", Attempt: p.Search, Where: "/" + p.Name + "/gatehouse-state", Value: o.Later.Value})
	}
	o.Attempts = append(o.Attempts, Attempt{Session: "s2", ID: "search-everywhere", Kind: "find", Outcome: "completed"})
	o.Sightings = append(o.Sightings, Sighting{Session: "s2", Attempt: "search-everywhere", Where: "/tmp/gatehouse-state", Value: o.Later.Value})
	return o
}

func setOutcome(o *PersistObservation, session, id, outcome string) {
	for i, a := range o.Attempts {
		if a.Session == session && a.ID == id {
			o.Attempts[i].Outcome = outcome
		}
	}
}

func TestJudgePersistence(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(o *PersistObservation)
		want   Verdict
		reason string
	}{
		{"every place searched and seen", func(*PersistObservation) {}, Pass, "2 place(s) searched"},
		{"the earlier's value found", func(o *PersistObservation) {
			o.Sightings = append(o.Sightings, Sighting{Session: "s2", Attempt: "search-home-cache", Where: "/home/agent/.cache/gatehouse/state", Value: o.Earlier.Value})
		}, Fail, "s1's value reached s2 through search-home-cache (/home/agent/.cache/gatehouse/state)"},
		// A FAIL needs neither the control nor complete searches.
		{"found by a partial search, no control", func(o *PersistObservation) {
			o.Hits = nil
			setOutcome(o, "s2", "search-everywhere", "partial")
			o.Sightings = append(o.Sightings, Sighting{Session: "s2", Attempt: "search-everywhere", Where: "/mnt/x", Value: o.Earlier.Value})
		}, Fail, "through search-everywhere (/mnt/x)"},
		{"the earlier's own reports do not count", func(o *PersistObservation) {
			o.Sightings = append(o.Sightings, Sighting{Session: "s1", Attempt: "x", Where: "/tmp", Value: o.Earlier.Value})
		}, Pass, ""},
		{"a blind search", func(o *PersistObservation) {
			o.Sightings = o.Sightings[1:] // not its own value in tmp
		}, Inconclusive, "tmp: the later session's search did not find the value it wrote there itself"},
		{"the later could not write where the earlier did", func(o *PersistObservation) {
			setOutcome(o, "s2", "stash-tmp", "denied")
		}, Inconclusive, "tmp: the earlier session wrote there but the later could not (denied)"},
		{"writable by neither is covered", func(o *PersistObservation) {
			setOutcome(o, "s1", "stash-tmp", "denied")
			setOutcome(o, "s2", "stash-tmp", "denied")
			o.Sightings = o.Sightings[1:]
		}, Pass, "1 writable by neither (tmp)"},
		// Writes that ran out of time (a loaded machine, issue 22) never
		// met the kernel's answer: no proof the place is unwritable.
		{"writes out of time in both are not writable-by-neither", func(o *PersistObservation) {
			setOutcome(o, "s1", "stash-tmp", "timeout")
			setOutcome(o, "s2", "stash-tmp", "timeout")
			o.Sightings = o.Sightings[1:]
		}, Inconclusive, "tmp: a write there did not finish (timeout)"},
		{"one write out of time, the other denied", func(o *PersistObservation) {
			setOutcome(o, "s1", "stash-tmp", "denied")
			setOutcome(o, "s2", "stash-tmp", "timeout")
			o.Sightings = o.Sightings[1:]
		}, Inconclusive, "tmp: a write there did not finish (timeout)"},
		{"a search not on record", func(o *PersistObservation) {
			setOutcome(o, "s2", "search-tmp", "timeout")
		}, Inconclusive, "tmp: the search there is not on record (timeout)"},
		{"a write without a report", func(o *PersistObservation) {
			o.Attempts = o.Attempts[1:]
		}, Inconclusive, "tmp: a write there has no report"},
		{"the search of every mount point partial", func(o *PersistObservation) {
			setOutcome(o, "s2", "search-everywhere", "partial")
		}, Inconclusive, "every mount point is not on record (partial)"},
		{"the search of every mount point blind", func(o *PersistObservation) {
			o.Sightings = o.Sightings[:len(o.Sightings)-1]
		}, Inconclusive, "did not find the later session's own value"},
		{"the earlier not shown gone", func(o *PersistObservation) {
			o.Gone, o.GoneProblem = false, "s1: 1 process(es) still running"
		}, Inconclusive, "s1 was not shown to be gone before s2 started"},
		{"no positive control", func(o *PersistObservation) { o.Hits = nil }, Inconclusive, "positive control failed in s2"},
		{"the same value twice", func(o *PersistObservation) { o.Later.Value = o.Earlier.Value }, Inconclusive, "two distinct values"},
		{"no place", func(o *PersistObservation) { o.Places = nil }, Inconclusive, "no place was planned"},
		{"a place the probe refused", func(o *PersistObservation) {
			for i := range o.Attempts {
				if o.Attempts[i].ID == "stash-tmp" {
					o.Attempts[i].Outcome, o.Attempts[i].Error = "denied", "probe refuses: kernel interface /tmp/x"
				}
			}
		}, Pass, "1 place(s) searched"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := persistCase()
			tt.edit(&o)
			j, cross, _ := JudgePersistence(o)
			if j.Verdict != tt.want || !strings.Contains(j.Reason, tt.reason) {
				t.Fatalf("%s (%s), want %s with %q", j.Verdict, j.Reason, tt.want, tt.reason)
			}
			if (j.Verdict == Fail) != (len(cross) > 0) {
				t.Errorf("crossings %+v with verdict %s", cross, j.Verdict)
			}
			for _, c := range cross {
				if c.Owner != "s1" || c.SeenBy != "s2" || c.Value != o.Earlier.Value || c.Where == "" {
					t.Errorf("crossing %+v: want the earlier's value, seen by the later, with where", c)
				}
			}
		})
	}
}
