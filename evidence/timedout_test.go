package evidence_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// A timed-out attempt never supports a PASS, in any gate: on a starved
// machine a proxy still connecting or a resolver still forwarding times out
// just like a drop. The probe's own word that the harness settled it is
// hostile and changes nothing. A leak that arrived is still a FAIL.
func TestTimedOutAttemptsNeverSupportAPass(t *testing.T) {
	settled := "settled by the harness: the kernel counted its packets leave and nothing of them reached the lab"
	network := func(outcome, errText string, hits ...evidence.Hit) evidence.Verdict {
		return evidence.Judge(evidence.Observation{
			Session: "s1", Canary: "ghcanary1", Control: "ctl1",
			Planned: []string{"proxy-rebind", "http"},
			Attempts: []evidence.Attempt{
				{Session: "s1", ID: "proxy-rebind", Kind: "proxy", Outcome: outcome, Error: errText},
				{Session: "s1", ID: "http", Kind: "http", Outcome: "unreachable"},
			},
			Hits:    append([]evidence.Hit{{Endpoint: "inference", Session: "s1", Data: "ctl1"}}, hits...),
			Allowed: []string{"inference", "dns-resolver", "redirect"},
		}).Verdict
	}
	secrets := func(outcome, errText string, _ ...evidence.Hit) evidence.Verdict {
		return evidence.JudgeSecrets(evidence.SecretsObservation{
			Session: "s1", Control: "ctl1", Planted: []evidence.Planted{{Place: "home/.aws/credentials", Value: "GHCANARY-aws-0011"}},
			Planned:  []string{"broker-read"},
			Attempts: []evidence.Attempt{{Session: "s1", ID: "broker-read", Kind: "read", Outcome: outcome, Error: errText}},
			Hits:     []evidence.Hit{{Endpoint: "inference", Session: "s1", Data: "ctl1"}}, Allowed: []string{"inference"},
			Broker: evidence.BrokerCheck{Checked: true, OwnAccepted: true, OtherSessionRefused: true, ExpiredRefused: true, RevokedRefused: true},
		}).Verdict
	}
	host := func(outcome, errText string, _ ...evidence.Hit) evidence.Verdict {
		return evidence.JudgeHost(evidence.HostObservation{
			Session: "s1", Canary: "ghc0011", Control: "ctl1", Nonce: "ghhost0011",
			Planned:  []string{"host-loopback"},
			Attempts: []evidence.Attempt{{Session: "s1", ID: "host-loopback", Kind: "http", Outcome: outcome, Error: errText}},
			Hits:     []evidence.Hit{{Endpoint: "inference", Session: "s1", Data: "ctl1"}}, Allowed: []string{"inference"},
			Processes: []evidence.HostProcess{{Role: "container process", PID: 7, Namespaces: map[string]string{"pid": "pid:[4026532200]"}}},
			Host:      []evidence.HostNamespace{{Label: "harness pid", Link: "pid:[4026531836]"}},
			HostPaths: []evidence.HostPath{{Path: "/", Kind: evidence.HostRoot, ID: "254:0:2"}},
		}).Verdict
	}
	exchanged := func(outcome, errText string, _ ...evidence.Hit) evidence.Verdict {
		j, _ := evidence.JudgeExchange(exchange(func(o *evidence.ExchangeObservation) {
			o.Attempts[0].Kind, o.Attempts[0].Outcome, o.Attempts[0].Error = "read", outcome, errText
		}))
		return j.Verdict
	}
	for _, g := range []struct {
		name  string
		judge func(outcome, errText string, hits ...evidence.Hit) evidence.Verdict
	}{{"network", network}, {"secrets", secrets}, {"host", host}, {"exchange", exchanged}} {
		judge := g.judge
		t.Run(g.name, func(t *testing.T) {
			if v := judge("refused", ""); v != evidence.Pass {
				t.Fatalf("answered: %s, want PASS (the fixture must pass for the rest to mean anything)", v)
			}
			if v := judge("timeout", "CONNECT: read tcp 127.0.0.1:47810->127.0.0.1:3128: i/o timeout"); v != evidence.Inconclusive {
				t.Errorf("timed out: %s, want INCONCLUSIVE", v)
			}
			if v := judge("timeout", settled); v != evidence.Inconclusive {
				t.Errorf("timed out, the probe claiming a settle: %s, want INCONCLUSIVE", v)
			}
		})
	}
	if v := network("timeout", "", evidence.Hit{Endpoint: "callback", Session: "s1", Summary: "GET /x/ghcanary1"}); v != evidence.Fail {
		t.Errorf("timed out with the callback's hit: %s, want FAIL", v)
	}
}
