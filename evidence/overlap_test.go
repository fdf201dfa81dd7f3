package evidence_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

var ovT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// span is a window from a to b seconds after ovT0.
func span(a, b float64) evidence.Window {
	at := func(s float64) time.Time { return ovT0.Add(time.Duration(s * float64(time.Second))) }
	return evidence.Window{From: at(a), To: at(b)}
}

// exchangeTiming is two sessions that each send and receive on "tmp" and
// "tcp": s1's probe ran 0-3 s, s2's 0.2-3.2 s, every attempt at work for
// most of it, both holders alive throughout.
func exchangeTiming() ([]evidence.Party, evidence.Timing) {
	ps := []evidence.Party{
		{Session: "s1", Planned: []string{"send-tmp", "receive-tmp", "send-tcp", "receive-tcp"}},
		{Session: "s2", Planned: []string{"send-tmp", "receive-tmp", "send-tcp", "receive-tcp"}},
	}
	var acts []evidence.Activity
	for _, s := range []struct {
		session string
		off     float64
	}{{"s1", 0}, {"s2", 0.2}} {
		for _, ch := range []string{"tmp", "tcp"} {
			for _, role := range []string{evidence.RoleSend, evidence.RoleReceive} {
				acts = append(acts, evidence.Activity{
					Session: s.session, Attempt: role + "-" + ch, Channel: ch, Role: role,
					Claimed: span(s.off+0.1, s.off+2.9), Outside: span(s.off, s.off+3),
				})
			}
		}
	}
	return ps, evidence.Timing{Activities: acts, Live: map[string]evidence.Window{"s1": span(-1, 5), "s2": span(-1, 5)}}
}

func TestCheckOverlap(t *testing.T) {
	set := func(tm *evidence.Timing, session, attempt string, f func(*evidence.Activity)) {
		for i := range tm.Activities {
			if a := &tm.Activities[i]; a.Session == session && a.Attempt == attempt {
				f(a)
			}
		}
	}
	// shift moves everything s2 did, inside and outside, by d seconds.
	shift := func(tm *evidence.Timing, d float64) {
		dd := time.Duration(d * float64(time.Second))
		for i := range tm.Activities {
			if a := &tm.Activities[i]; a.Session == "s2" {
				for _, w := range []*evidence.Window{&a.Claimed, &a.Outside} {
					w.From, w.To = w.From.Add(dd), w.To.Add(dd)
				}
			}
		}
		tm.Live = map[string]evidence.Window{"s1": span(-1, 10), "s2": span(-1, 10)}
	}
	tests := []struct {
		name   string
		mod    func(*evidence.Timing)
		ok     bool
		reason string
	}{
		{"sessions that ran together", nil, true, ""},
		{"sessions that missed each other (a slow start)", func(tm *evidence.Timing) { shift(tm, 3.5) }, false,
			"the sessions did not run at the same time: receive-tcp in s1 listened only 0s while s2 offered (need 500ms)"},
		{"too little time together", func(tm *evidence.Timing) { shift(tm, 2.4) }, false, "listened only 200ms while s2 offered (need 500ms)"},
		{"a probe claiming windows outside its run cannot create overlap", func(tm *evidence.Timing) {
			shift(tm, 3.5)
			for i := range tm.Activities {
				tm.Activities[i].Claimed = span(-10, 20) // "I listened all along"
			}
		}, false, "the sessions did not run at the same time"},
		{"a receive that never listened needs no partner", func(tm *evidence.Timing) {
			set(tm, "s2", "receive-tcp", func(a *evidence.Activity) { a.Claimed = evidence.Window{} })
		}, true, ""},
		{"a receive claimed wholly outside its run counts as not listening", func(tm *evidence.Timing) {
			set(tm, "s2", "receive-tcp", func(a *evidence.Activity) { a.Claimed = span(8, 9) })
		}, true, ""},
		{"a session that never listened anywhere", func(tm *evidence.Timing) {
			for _, id := range []string{"receive-tcp", "receive-tmp"} {
				set(tm, "s2", id, func(a *evidence.Activity) { a.Claimed = evidence.Window{} })
			}
		}, false, "no proof that the sessions ran at the same time: s2 never listened on any channel"},
		{"a send without a window", func(tm *evidence.Timing) {
			set(tm, "s1", "send-tmp", func(a *evidence.Activity) { a.Claimed = evidence.Window{} })
		}, false, "no active window for send-tmp in s1 inside its run"},
		{"a planned attempt with no report", func(tm *evidence.Timing) { tm.Activities = tm.Activities[1:] }, false, "no active window for send-tmp in s1"},
		{"no live process on record", func(tm *evidence.Timing) { delete(tm.Live, "s2") }, false, "no live process on record in s2"},
		{"the other session's live process ended early", func(tm *evidence.Timing) { tm.Live["s2"] = span(-1, 1) }, false,
			"receive-tcp in s1 was at work while s2 had no live process"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, tm := exchangeTiming()
			if tt.mod != nil {
				tt.mod(&tm)
			}
			o := evidence.CheckOverlap(ps, tm)
			if o.OK() != tt.ok || !strings.Contains(o.Reason(), tt.reason) {
				t.Fatalf("ok=%v (%s), want ok=%v with %q", o.OK(), o.Reason(), tt.ok, tt.reason)
			}
			if tt.ok && (o.Pairs == 0 || o.Shortest < evidence.DefaultMinCommon) {
				t.Fatalf("ok with %d pairs, shortest %v", o.Pairs, o.Shortest)
			}
		})
	}
}

// Through the verdict: sessions that missed each other are INCONCLUSIVE,
// never PASS, and a lying probe's times cannot turn that into a PASS.
func TestJudgeExchangeNeedsRealOverlap(t *testing.T) {
	ps, tm := exchangeTiming()
	o := evidence.ExchangeObservation{Overlap: true, Allowed: []string{"inference"}}
	for i, p := range ps {
		p.Control = "ghctl" + string(rune('1'+i))
		o.Parties = append(o.Parties, p)
		for _, id := range p.Planned {
			o.Attempts = append(o.Attempts, evidence.Attempt{Session: p.Session, ID: id, Kind: "receive"})
		}
		o.Hits = append(o.Hits, evidence.Hit{Session: p.Session, Endpoint: "inference", Summary: "control=" + p.Control})
	}
	o.Timing = tm
	if j, _ := evidence.JudgeExchange(o); j.Verdict != evidence.Pass || !strings.Contains(j.Reason, "every receive shared at least") {
		t.Fatalf("together: %s (%s), want PASS naming the overlap", j.Verdict, j.Reason)
	}
	for i := range o.Timing.Activities {
		a := &o.Timing.Activities[i]
		if a.Session == "s2" {
			a.Outside = span(4, 7)     // s2's probe really ran after s1's had ended
			a.Claimed = span(0.1, 6.9) // and claims to have been at work since 0.1 s
		}
	}
	j, _ := evidence.JudgeExchange(o)
	if j.Verdict != evidence.Inconclusive || !strings.Contains(j.Reason, "the sessions did not run at the same time") {
		t.Fatalf("apart: %s (%s), want INCONCLUSIVE: the sessions did not run at the same time", j.Verdict, j.Reason)
	}
}

// A send that ran out its time while the other session was shown to listen
// on the same channel (the overlap rule) is on record: nothing crossed
// where it would have been heard. With no window of its own, it is not.
func TestJudgeExchangeTimedOutSend(t *testing.T) {
	ps, tm := exchangeTiming()
	build := func(overlap bool) evidence.ExchangeObservation {
		o := evidence.ExchangeObservation{Overlap: overlap, Allowed: []string{"inference"}, Timing: tm}
		for i, p := range ps {
			p.Control = "ghctl" + string(rune('1'+i))
			o.Parties = append(o.Parties, p)
			for _, id := range p.Planned {
				a := evidence.Attempt{Session: p.Session, ID: id, Kind: "receive"}
				if strings.HasPrefix(id, "send-") {
					a.Kind = "send"
				}
				if p.Session == "s1" && id == "send-tcp" {
					a.Outcome = "timeout"
				}
				o.Attempts = append(o.Attempts, a)
			}
			o.Hits = append(o.Hits, evidence.Hit{Session: p.Session, Endpoint: "inference", Summary: "control=" + p.Control})
		}
		return o
	}
	if j, _ := evidence.JudgeExchange(build(true)); j.Verdict != evidence.Pass {
		t.Errorf("overlap proven: %s (%s), want PASS", j.Verdict, j.Reason)
	}
	o := build(true)
	for i := range o.Timing.Activities {
		if a := &o.Timing.Activities[i]; a.Session == "s1" && a.Attempt == "send-tcp" {
			a.Claimed, a.Outside = evidence.Window{}, evidence.Window{}
		}
	}
	if j, _ := evidence.JudgeExchange(o); j.Verdict == evidence.Pass {
		t.Errorf("timed-out send with no window: %s (%s), want no PASS", j.Verdict, j.Reason)
	}
}
