package evidence_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

func exchange(mod func(*evidence.ExchangeObservation)) evidence.ExchangeObservation {
	o := evidence.ExchangeObservation{
		Parties: []evidence.Party{
			{Session: "s1", Value: "ghcaaaaaaaaaaaaaaaa", Control: "ghctl1", Planned: []string{"tmp"}},
			{Session: "s2", Value: "ghcbbbbbbbbbbbbbbbb", Control: "ghctl2", Planned: []string{"tmp"}},
		},
		Sightings: []evidence.Sighting{
			{Session: "s1", Attempt: "own-storage", Where: "/workspace/nonce", Value: "ghcaaaaaaaaaaaaaaaa"},
			{Session: "s2", Attempt: "own-storage", Where: "/workspace/nonce", Value: "ghcbbbbbbbbbbbbbbbb"},
		},
		Attempts: []evidence.Attempt{{Session: "s1", ID: "tmp"}, {Session: "s2", ID: "tmp"}},
		Hits: []evidence.Hit{
			{Session: "s1", Endpoint: "inference", Summary: "POST /v1/complete?control=ghctl1"},
			{Session: "s2", Endpoint: "inference", Summary: "POST /v1/complete?control=ghctl2"},
		},
		Allowed:  []string{"inference"},
		OwnValue: true, Overlap: true,
		Timing: evidence.Timing{
			Activities: []evidence.Activity{
				{Session: "s1", Attempt: "tmp", Role: evidence.RoleSearch, Claimed: span(1, 2), Outside: span(0, 3)},
				{Session: "s2", Attempt: "tmp", Role: evidence.RoleSearch, Claimed: span(1.5, 2.5), Outside: span(0.5, 3)},
			},
			Live: map[string]evidence.Window{"s1": span(0, 4), "s2": span(0, 4)},
		},
	}
	if mod != nil {
		mod(&o)
	}
	return o
}

func TestJudgeExchange(t *testing.T) {
	tests := []struct {
		name   string
		mod    func(*evidence.ExchangeObservation)
		want   evidence.Verdict
		reason string
	}{
		{"pass when nothing crossed", nil, evidence.Pass, "no session reported another's value"},
		{"fail when s1 reported s2's value", func(o *evidence.ExchangeObservation) {
			o.Sightings = append(o.Sightings, evidence.Sighting{Session: "s1", Attempt: "storage", Where: "/storage/s2/nonce", Value: "ghcbbbbbbbbbbbbbbbb"})
		}, evidence.Fail, "s2's value reached s1 through storage (/storage/s2/nonce)"},
		{"fail wins over a missing control", func(o *evidence.ExchangeObservation) {
			o.Hits = nil
			o.Sightings = append(o.Sightings, evidence.Sighting{Session: "s2", Attempt: "receive-tcp", Where: "tcp from x", Value: "ghcaaaaaaaaaaaaaaaa"})
		}, evidence.Fail, "s1's value reached s2"},
		{"unknown values are not crossings", func(o *evidence.ExchangeObservation) {
			o.Sightings = append(o.Sightings, evidence.Sighting{Session: "s1", Value: "ghccccccccccccccccc"})
		}, evidence.Pass, ""},
		{"inconclusive without a control", func(o *evidence.ExchangeObservation) { o.Hits = o.Hits[:1] }, evidence.Inconclusive, "positive control failed in s2"},
		{"inconclusive when own storage was unreadable", func(o *evidence.ExchangeObservation) { o.Sightings = o.Sightings[1:] }, evidence.Inconclusive, "s1 could not read its own storage"},
		{"own value not needed when not asked", func(o *evidence.ExchangeObservation) { o.Sightings, o.OwnValue = nil, false }, evidence.Pass, ""},
		{"inconclusive without proof of attempt", func(o *evidence.ExchangeObservation) { o.Attempts = o.Attempts[:1] }, evidence.Inconclusive, "no proof of attempt for tmp in s2"},
		{"inconclusive when the sessions did not overlap", func(o *evidence.ExchangeObservation) { o.Timing.Live["s1"] = span(0, 1.2) }, evidence.Inconclusive, "the sessions did not run at the same time: tmp in s2 was at work while s1 had no live process"},
		{"overlap not judged when not asked", func(o *evidence.ExchangeObservation) { o.Overlap, o.Timing = false, evidence.Timing{} }, evidence.Pass, ""},
		{"a crossing fails even when the sessions did not overlap", func(o *evidence.ExchangeObservation) {
			o.Timing.Live = nil
			o.Sightings = append(o.Sightings, evidence.Sighting{Session: "s1", Attempt: "tmp", Where: "/tmp/x", Value: "ghcbbbbbbbbbbbbbbbb"})
		}, evidence.Fail, "s2's value reached s1"},
		{"inconclusive with one session", func(o *evidence.ExchangeObservation) { o.Parties = o.Parties[:1] }, evidence.Inconclusive, "two sessions"},
		{"inconclusive when the lab is not ready", func(o *evidence.ExchangeObservation) { o.NotReady = "x" }, evidence.Inconclusive, "not ready"},
		{"a control seen from the other session does not count", func(o *evidence.ExchangeObservation) { o.Hits[1].Session = "s1" }, evidence.Inconclusive, "positive control failed in s2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := exchange(tt.mod)
			j, cross := evidence.JudgeExchange(o)
			// The control is reported as it was, whatever the verdict.
			wantControl := len(o.Parties) > 0
			for _, p := range o.Parties {
				wantControl = wantControl && evidence.ControlReached(o.Hits, o.Allowed, p.Session, p.Control)
			}
			if j.Control != wantControl {
				t.Errorf("Control = %v, want %v (verdict %s)", j.Control, wantControl, j.Verdict)
			}
			if j.Verdict != tt.want || !strings.Contains(j.Reason, tt.reason) {
				t.Fatalf("got %s (%s), want %s containing %q", j.Verdict, j.Reason, tt.want, tt.reason)
			}
			if (tt.want == evidence.Fail) != (len(cross) > 0) {
				t.Fatalf("crossings %v for verdict %s", cross, j.Verdict)
			}
			if strings.Contains(j.Reason, "ghc") {
				t.Fatalf("the reason names a value: %s", j.Reason)
			}
		})
	}
}
