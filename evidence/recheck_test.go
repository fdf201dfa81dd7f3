package evidence_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

func TestRecheck(t *testing.T) {
	t0 := time.Now()
	pass := func() []evidence.Result {
		return []evidence.Result{{Gate: "g", Session: "s1", Verdict: evidence.Pass, Start: t0, DurationMS: 10}}
	}
	tests := []struct {
		name    string
		hits    []evidence.Hit
		dropped int
		want    evidence.Verdict
	}{
		{"nothing new keeps the pass", []evidence.Hit{{Endpoint: "inference", Session: "s1"}}, 0, evidence.Pass},
		// Late hits are each gate's own business (steps.Outcome.Judge): a
		// contact one gate forbids may be another gate's legitimate use.
		{"a late hit is left to the gate's own judgement", []evidence.Hit{{Endpoint: "engine-socket", Session: "s1", Time: t0.Add(time.Second)}}, 0, evidence.Pass},
		{"another session's hit does not", []evidence.Hit{{Endpoint: "callback", Session: "s2"}}, 0, evidence.Pass},
		{"dropped hits make it inconclusive", nil, 3, evidence.Inconclusive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := pass()
			evidence.Recheck(rs, tt.hits, tt.dropped)
			if rs[0].Verdict != tt.want {
				t.Fatalf("%s (%s), want %s", rs[0].Verdict, rs[0].Reason, tt.want)
			}
		})
	}
	fail := []evidence.Result{{Verdict: evidence.Fail, Session: "s1"}}
	if evidence.Recheck(fail, nil, 5) != 0 || fail[0].Verdict != evidence.Fail {
		t.Error("Recheck changed a FAIL")
	}
}

func TestRecheckTraces(t *testing.T) {
	cut := func(n int64) evidence.TraceCut {
		return evidence.TraceCut{TraceLimit: evidence.DefaultTraceLimit, DroppedLines: n, DroppedBytes: 40 * n}
	}
	agent := &evidence.AgentFacts{Name: "claude-code"}
	tests := []struct {
		name    string
		result  evidence.Result
		cuts    map[string]evidence.TraceCut
		want    evidence.Verdict
		naming  string // in the new reason
		changed int
	}{
		{"no cut keeps the pass", evidence.Result{Verdict: evidence.Pass}, nil, evidence.Pass, "", 0},
		{"a cut hit trace makes a pass inconclusive", evidence.Result{Verdict: evidence.Pass},
			map[string]evidence.TraceCut{"traces/endpoint-hits.jsonl": cut(25_000)}, evidence.Inconclusive, "traces/endpoint-hits.jsonl reached its limit (100000 lines, 134217728 bytes) and dropped 25000 line(s)", 1},
		{"a cut attempts trace makes a pass inconclusive", evidence.Result{Verdict: evidence.Pass},
			map[string]evidence.TraceCut{"traces/probe-attempts.jsonl": cut(1)}, evidence.Inconclusive, "traces/probe-attempts.jsonl", 1},
		{"a fail stays a fail", evidence.Result{Verdict: evidence.Fail, Reason: "callback heard"},
			map[string]evidence.TraceCut{"traces/endpoint-hits.jsonl": cut(9)}, evidence.Fail, "callback heard", 0},
		{"a cut alerts trace changes no verdict", evidence.Result{Verdict: evidence.Pass},
			map[string]evidence.TraceCut{evidence.AlertsTrace: cut(9)}, evidence.Pass, "", 0},
		{"a cut transcript leaves a probe run's pass", evidence.Result{Verdict: evidence.Pass},
			map[string]evidence.TraceCut{evidence.TranscriptTrace: cut(9)}, evidence.Pass, "", 0},
		{"a cut transcript makes an agent run's pass inconclusive", evidence.Result{Verdict: evidence.Pass, Agent: agent},
			map[string]evidence.TraceCut{evidence.TranscriptTrace: cut(9)}, evidence.Inconclusive, "traces/model-transcript.jsonl", 1},
		{"a count of zero is no cut", evidence.Result{Verdict: evidence.Pass},
			map[string]evidence.TraceCut{"traces/endpoint-hits.jsonl": cut(0)}, evidence.Pass, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := []evidence.Result{tt.result}
			n := evidence.RecheckTraces(rs, tt.cuts)
			if rs[0].Verdict != tt.want || n != tt.changed || !strings.Contains(rs[0].Reason, tt.naming) {
				t.Fatalf("%s (%q), %d changed; want %s naming %q, %d changed", rs[0].Verdict, rs[0].Reason, n, tt.want, tt.naming, tt.changed)
			}
		})
	}
}

// A packet the kernel dropped at the lab's sockets never became a hit: no
// PASS stands on such a record, and a FAIL stays a FAIL (issue 22).
func TestRecheckDrops(t *testing.T) {
	tests := []struct {
		name    string
		drops   []string
		err     error
		changed int
		reason  string
	}{
		{"no drops change nothing", nil, nil, 0, ""},
		{"a drop makes PASS inconclusive", []string{"Udp:RcvbufErrors +3"}, nil, 1, "Udp:RcvbufErrors +3"},
		{"unreadable counters make PASS inconclusive", nil, errors.New("no snmp"), 1, "could not be read (no snmp)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := []evidence.Result{{Verdict: evidence.Pass}, {Verdict: evidence.Fail, Reason: "leak"}, {Verdict: evidence.Inconclusive}}
			if n := evidence.RecheckDrops(rs, tt.drops, tt.err); n != tt.changed {
				t.Errorf("changed %d, want %d", n, tt.changed)
			}
			if tt.changed > 0 && (rs[0].Verdict != evidence.Inconclusive || !strings.Contains(rs[0].Reason, tt.reason)) {
				t.Errorf("PASS became %s (%s), want INCONCLUSIVE naming %q", rs[0].Verdict, rs[0].Reason, tt.reason)
			}
			if tt.changed == 0 && rs[0].Verdict != evidence.Pass {
				t.Errorf("PASS became %s", rs[0].Verdict)
			}
			if rs[1].Verdict != evidence.Fail || rs[1].Reason != "leak" {
				t.Errorf("FAIL became %s (%s)", rs[1].Verdict, rs[1].Reason)
			}
		})
	}
}
