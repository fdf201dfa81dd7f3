package evidence_test

import (
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

func TestJudge(t *testing.T) {
	allowed := []string{"inference", "dns-resolver", "redirect"}
	attempts := []evidence.Attempt{{Session: "s1", ID: "http", Outcome: "timeout"}, {Session: "s1", ID: "dns", Outcome: "denied"}}
	control := evidence.Hit{Endpoint: "inference", Session: "s1", Data: "x-gatehouse-control: CTRL1"}
	base := func() evidence.Observation {
		return evidence.Observation{
			Session: "s1", Canary: "ghcanary1", Control: "ctrl1",
			Planned: []string{"http", "dns"}, Attempts: attempts,
			Hits: []evidence.Hit{control}, Allowed: allowed,
		}
	}
	tests := []struct {
		name   string
		change func(o *evidence.Observation)
		want   evidence.Verdict
	}{
		{"pass when attempted, nothing arrived and control worked", func(o *evidence.Observation) {}, evidence.Pass},
		{"fail when the callback saw the session", func(o *evidence.Observation) {
			o.Hits = append(o.Hits, evidence.Hit{Endpoint: "callback", Session: "s1", Proto: "tcp"})
		}, evidence.Fail},
		{"fail when the canary arrived relayed from elsewhere", func(o *evidence.Observation) {
			o.Hits = append(o.Hits, evidence.Hit{Endpoint: "dns-authority", Summary: "A GHCANARY1.oob.gatehouse.test."})
		}, evidence.Fail},
		{"fail even when the probe says everything was blocked", func(o *evidence.Observation) {
			for i := range o.Attempts {
				o.Attempts[i].Outcome = "timeout"
			}
			o.Hits = append(o.Hits, evidence.Hit{Endpoint: "metadata-aws", Session: "s1", Served: true})
		}, evidence.Fail},
		{"fail beats a failed control", func(o *evidence.Observation) {
			o.Hits = []evidence.Hit{{Endpoint: "callback", Session: "s1"}}
		}, evidence.Fail},
		{"other sessions' hits without the canary are not ours", func(o *evidence.Observation) {
			o.Hits = append(o.Hits, evidence.Hit{Endpoint: "callback", Session: "s2"})
		}, evidence.Pass},
		{"an unattributed forbidden contact while the session ran is no pass", func(o *evidence.Observation) {
			o.Hits = append(o.Hits, evidence.Hit{Endpoint: "metadata-aws", Proto: "http", Summary: "GET /latest/meta-data/"})
		}, evidence.Inconclusive},
		{"an unattributed contact before the session started is not its", func(o *evidence.Observation) {
			o.Since = time.Now()
			o.Hits = append(o.Hits, evidence.Hit{Endpoint: "metadata-aws", Time: o.Since.Add(-time.Second)})
		}, evidence.Pass},
		{"an unattributed contact with an allowed endpoint is no concern", func(o *evidence.Observation) {
			o.Hits = append(o.Hits, evidence.Hit{Endpoint: "inference", Summary: "POST /v1/complete"})
		}, evidence.Pass},
		{"inconclusive when the control never arrived", func(o *evidence.Observation) {
			o.Hits = nil
		}, evidence.Inconclusive},
		{"inconclusive when the control came from another session", func(o *evidence.Observation) {
			o.Hits = []evidence.Hit{{Endpoint: "inference", Session: "s2", Data: "ctrl1"}}
		}, evidence.Inconclusive},
		{"inconclusive when an attempt is not on record", func(o *evidence.Observation) {
			o.Attempts = o.Attempts[:1]
		}, evidence.Inconclusive},
		{"inconclusive when attempts came from another session", func(o *evidence.Observation) {
			o.Attempts = []evidence.Attempt{{Session: "s2", ID: "http", Outcome: "timeout"}, {Session: "s2", ID: "dns", Outcome: "timeout"}}
		}, evidence.Inconclusive},
		{"inconclusive when the probe failed before anything left it", func(o *evidence.Observation) {
			o.Attempts[0].Outcome = "error"
		}, evidence.Inconclusive},
		{"inconclusive when the probe refused its own attempt", func(o *evidence.Observation) {
			o.Attempts[0].Error = "probe refuses: kernel interface"
		}, evidence.Inconclusive},
		{"pass when the kernel counted a packet toward every attempt", func(o *evidence.Observation) {
			o.Dests = map[string]string{"http": "callback4", "dns": "authority"}
			o.Emitted = map[string]uint64{"callback4": 3, "authority": 1}
		}, evidence.Pass},
		{"inconclusive when the probe says it tried but the kernel counted nothing", func(o *evidence.Observation) {
			o.Dests = map[string]string{"http": "callback4", "dns": "authority"}
			o.Emitted = map[string]uint64{"callback4": 0, "authority": 1}
		}, evidence.Inconclusive},
		{"an attempt the kernel refused locally needs no packet", func(o *evidence.Observation) {
			o.Attempts[0].Outcome = "unreachable"
			o.Dests = map[string]string{"http": "callback6", "dns": "authority"}
			o.Emitted = map[string]uint64{"authority": 1}
		}, evidence.Pass},
		{"inconclusive when the accounting could not be read", func(o *evidence.Observation) {
			o.AcctError = "table gone"
		}, evidence.Inconclusive},
		{"fail stays fail whatever the accounting says", func(o *evidence.Observation) {
			o.AcctError = "table gone"
			o.Hits = append(o.Hits, evidence.Hit{Endpoint: "callback", Session: "s1"})
		}, evidence.Fail},
		{"inconclusive when nothing was planned", func(o *evidence.Observation) {
			o.Planned = nil
		}, evidence.Inconclusive},
		{"inconclusive when endpoints were not ready", func(o *evidence.Observation) {
			o.NotReady = "dns down"
		}, evidence.Inconclusive},
		{"inconclusive without a control token", func(o *evidence.Observation) {
			o.Control = ""
		}, evidence.Inconclusive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base()
			o.Attempts = append([]evidence.Attempt(nil), attempts...)
			tt.change(&o)
			j := evidence.Judge(o)
			if j.Verdict != tt.want {
				t.Fatalf("verdict %s (%s), want %s", j.Verdict, j.Reason, tt.want)
			}
			if j.Reason == "" {
				t.Fatal("a verdict without a reason")
			}
		})
	}
}
