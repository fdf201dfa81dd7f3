package evidence_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

func TestAnswered(t *testing.T) {
	tests := []struct {
		name string
		a    evidence.Attempt
		want bool
	}{
		{"refused", evidence.Attempt{Outcome: "refused"}, true},
		{"unreachable", evidence.Attempt{Outcome: "unreachable"}, true},
		{"denied by a proxy", evidence.Attempt{Outcome: "denied"}, true},
		{"completed", evidence.Attempt{Outcome: "completed"}, true},
		{"a bare timeout", evidence.Attempt{Outcome: "timeout"}, false},
		{"a timeout the probe says was settled", evidence.Attempt{Outcome: "timeout", Error: "settled by the harness: ..."}, false},
		{"a timeout the kernel showed dropped", evidence.Attempt{Outcome: "timeout", Dropped: "settled by the harness"}, true},
	}
	for _, tt := range tests {
		if got := evidence.Answered(tt.a); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// What proves a timed-out attempt blocked, and what the verdict says when
// nothing does.
func TestTimedOutAttemptsInJudge(t *testing.T) {
	control := evidence.Hit{Endpoint: "inference", Session: "s1", Data: "ctl1"}
	base := func(as ...evidence.Attempt) evidence.Observation {
		return evidence.Observation{
			Session: "s1", Canary: "ghcanary1", Control: "ctl1", Planned: []string{"proxy-rebind", "dns"},
			Attempts: append([]evidence.Attempt{{Session: "s1", ID: "dns", Outcome: "timeout", Dropped: "the kernel counted 1 packet(s) of udp 203.0.113.53:53 leave"}}, as...),
			Hits:     []evidence.Hit{control}, Allowed: []string{"inference"},
		}
	}
	timeout := evidence.Attempt{Session: "s1", ID: "proxy-rebind", Outcome: "timeout"}
	tests := []struct {
		name   string
		o      evidence.Observation
		want   evidence.Verdict
		reason []string
	}{
		{"a drop the kernel showed counts", base(evidence.Attempt{Session: "s1", ID: "proxy-rebind", Outcome: "denied"}), evidence.Pass, []string{"2 attempts on record"}},
		{"a later try that answered counts", base(timeout, evidence.Attempt{Session: "s1", ID: "proxy-rebind", Outcome: "denied", Try: 1}), evidence.Pass, nil},
		{"starved: too loaded to judge", func() evidence.Observation {
			o := base(timeout, evidence.Attempt{Session: "s1", ID: "proxy-rebind", Outcome: "timeout", Try: 3})
			o.Load = &evidence.Load{Delay: 250 * time.Millisecond, Retries: 3, Longest: 8 * time.Second}
			return o
		}(), evidence.Inconclusive, []string{"the machine was too loaded to judge: 1 of 2 attempts timed out", "after 3 round(s)", "harness delay measured 250ms", "proxy-rebind"}},
		{"quiet: a way that hangs", func() evidence.Observation {
			o := base(timeout)
			o.Load = &evidence.Load{Delay: time.Millisecond, Retries: 3, Longest: 8 * time.Second}
			return o
		}(), evidence.Inconclusive, []string{"harness delay measured 1ms, so not the machine's load"}},
		{"the kernel's CPU pressure says starved where the sleeps did not", func() evidence.Observation {
			o := base(timeout)
			o.Load = &evidence.Load{Delay: time.Millisecond, Retries: 3, Longest: 8 * time.Second, CPUWait: 6 * time.Second, Watched: 20 * time.Second, CPUKnown: true}
			return o
		}(), evidence.Inconclusive, []string{"the machine was too loaded to judge", "tasks waited for a CPU 6s of the 20s watched"}},
		{"a timeout and a report missing say both", func() evidence.Observation {
			o := base(timeout)
			o.Planned = append(o.Planned, "tcp")
			return o
		}(), evidence.Inconclusive, []string{"1 of 3 attempts timed out", "no proof of attempt for tcp"}},
		{"a timeout the kernel never counted is a probe's lie first", func() evidence.Observation {
			o := base(timeout)
			o.Emitted, o.Dests = map[string]uint64{"callback4": 0, "resolver": 1}, map[string]string{"proxy-rebind": "callback4", "dns": "resolver"}
			return o
		}(), evidence.Inconclusive, []string{"the kernel counted no packet toward callback4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := evidence.Judge(tt.o)
			if j.Verdict != tt.want {
				t.Fatalf("%s (%s), want %s", j.Verdict, j.Reason, tt.want)
			}
			for _, r := range tt.reason {
				if !strings.Contains(j.Reason, r) {
					t.Errorf("reason %q lacks %q", j.Reason, r)
				}
			}
		})
	}
}
