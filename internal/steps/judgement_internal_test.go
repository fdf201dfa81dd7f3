package steps

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab/intake"
)

// entries is an intake store's record, as the rehearsal reads it.
type entries []intake.Entry

func (e entries) All() []intake.Entry { return e }

// provisionally records a scenario as finish does: the judgement over the
// hits at step time, the closing, and what the final verdict is made from.
func provisionally(obs observation, hits []evidence.Hit, cl closing) *Outcome {
	j, cross := judgeFinal(obs, hits)
	res := evidence.Result{Gate: "g", Path: "normal", Session: "s0", Verdict: j.Verdict, Reason: j.Reason,
		Control: j.Control, Hits: j.Violating, Crossings: cross, Findings: j.Findings}
	cl.apply(&res)
	return &Outcome{Results: []evidence.Result{res}, judged: map[string]judged{"s0/g": {obs: obs, closing: cl, provisional: res}}}
}

// The families that need a real sandbox and lab to reach their judge step
// through the suite (stop-signal, the rehearsal) are judged here from
// their observations: the final verdict over the step's own hits is the
// provisional one; a late hit FAILs it, saying what it was.
func TestOneVerdictFromTheObservation(t *testing.T) {
	t0 := time.Now()
	control := evidence.Hit{Time: t0, Endpoint: "inference", Proto: "http", Session: "s0", Summary: "GET /v1/ctl-1"}
	sub := intake.Subject{Run: "r1", Report: "p1", Tenant: "t1"}
	tests := []struct {
		name        string
		obs         observation
		late        evidence.Hit
		provisional evidence.Verdict
	}{
		{"stop: a heartbeat after the limit fails a pass", stopObs{session: "s0", control: "ctl-1", limit: 5 * time.Second,
			stops: []time.Time{t0}, tags: []string{"hb1"},
			runs: []evidence.StopRun{{Session: "s1", MainBefore: true, ChildBefore: true, Gone: 100 * time.Millisecond, TokenChecked: true, TokenRefused: true}}},
			evidence.Hit{Time: t0.Add(8 * time.Second), Endpoint: "inference", Proto: "http", Session: "s1", Summary: "GET /hb?hb=hb1&who=main"},
			evidence.Pass},
		{"rehearsal: a late forbidden contact fails a pass", rehearsalObs{
			net: evidence.Observation{Session: "s0", Canary: "cn-1", Control: "ctl-1", Planned: []string{"forbidden"},
				Attempts: []evidence.Attempt{{Session: "s0", ID: "forbidden", Outcome: "timeout"}},
				Allowed:  append(append([]string(nil), allowedEndpoints...), "intake")},
			rh:    &Rehearsal{Subject: sub},
			store: entries{{Subject: sub, Result: &intake.Result{ReportID: "p1"}}}},
			evidence.Hit{Time: t0, Endpoint: "callback", Proto: "tcp", Session: "s0", Summary: "tcp connect"},
			evidence.Pass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits := []evidence.Hit{control}
			out := provisionally(tt.obs, hits, closing{})
			p := out.Results[0]
			if p.Verdict != tt.provisional {
				t.Fatalf("provisional %s (%s), want %s", p.Verdict, p.Reason, tt.provisional)
			}
			if n := out.Judge(hits); n != 0 || !reflect.DeepEqual(out.Results[0], p) {
				t.Errorf("the step's own hits judged again: %d change(s), %+v", n, out.Results[0])
			}
			if n := out.Judge(append(hits, tt.late)); n != 1 {
				t.Errorf("%d verdict(s) changed by the late hit, want 1", n)
			}
			if r := out.Results[0]; r.Verdict != evidence.Fail || !strings.Contains(r.Reason, "changed from "+string(p.Verdict)) {
				t.Errorf("with the late hit: %s (%s), want FAIL saying it was %s", r.Verdict, r.Reason, p.Verdict)
			}
		})
	}
}

// The final verdict keeps what finish added: a teardown that left
// something behind keeps a PASS from standing, and a FAIL stands over it;
// a lab that was not sealed when the step read it lets no PASS through,
// whatever arrives later; a control heard only late counts.
func TestFinalVerdictKeepsWhatWasObserved(t *testing.T) {
	t0 := time.Now()
	control := evidence.Hit{Time: t0, Endpoint: "inference", Proto: "http", Session: "s0", Summary: "GET /v1/ctl-1"}
	forbidden := evidence.Hit{Time: t0, Endpoint: "callback", Proto: "udp", Session: "s0", Summary: "udp 12 bytes"}
	net := evidence.Observation{Session: "s0", Canary: "cn-1", Control: "ctl-1", Planned: []string{"udp"},
		Attempts: []evidence.Attempt{{Session: "s0", ID: "udp", Outcome: "timeout"}}, Allowed: allowedEndpoints}
	unsealed := net
	unsealed.NotReady = "the lab is no longer sealed: a route out"
	tests := []struct {
		name      string
		obs       observation
		cl        closing
		step, all []evidence.Hit
		want      evidence.Verdict
		why       string
	}{
		{"leftover keeps a pass inconclusive", networkObs{net}, closing{leftover: "a process"},
			[]evidence.Hit{control}, []evidence.Hit{control}, evidence.Inconclusive, "the teardown left something behind"},
		{"a late fail stands over a leftover", networkObs{net}, closing{leftover: "a process"},
			[]evidence.Hit{control}, []evidence.Hit{control, forbidden}, evidence.Fail, "changed from INCONCLUSIVE"},
		{"an unsealed lab never passes", networkObs{unsealed}, closing{},
			nil, []evidence.Hit{control}, evidence.Inconclusive, "not ready"},
		{"an unsealed lab still fails on a late hit", networkObs{unsealed}, closing{},
			nil, []evidence.Hit{control, forbidden}, evidence.Fail, "forbidden contact"},
		{"a control heard late counts", networkObs{net}, closing{},
			nil, []evidence.Hit{control}, evidence.Pass, "changed from INCONCLUSIVE"},
		{"a response's note is kept", networkObs{net}, closing{responded: true},
			nil, nil, evidence.Inconclusive, "the response (--respond) acted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := provisionally(tt.obs, tt.step, tt.cl)
			out.Judge(tt.all)
			if r := out.Results[0]; r.Verdict != tt.want || !strings.Contains(r.Reason, tt.why) {
				t.Errorf("%s (%s), want %s with %q", r.Verdict, r.Reason, tt.want, tt.why)
			}
		})
	}
}
