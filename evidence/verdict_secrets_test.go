package evidence_test

import (
	"strings"
	"testing"

	"gatehouse/evidence"
)

func TestJudgeSecrets(t *testing.T) {
	const aws = "GHCANARY-home-aws-00aa11bb22cc33dd"
	planted := []evidence.Planted{
		{Place: "home/.aws/credentials", Value: aws},
		{Place: "env/GITHUB_TOKEN", Value: "GHCANARY-env-github-44ee55ff66"},
	}
	control := evidence.Hit{Endpoint: "inference", Session: "s1", Data: "X-Gatehouse-Control: ctl1"}
	brokerOK := evidence.BrokerCheck{Checked: true, OwnAccepted: true, OtherSessionRefused: true, ExpiredRefused: true, RevokedRefused: true}
	base := func() evidence.SecretsObservation {
		return evidence.SecretsObservation{
			Session: "s1", Control: "ctl1", Planted: planted,
			Planned:  []string{"environment", "home-files"},
			Attempts: []evidence.Attempt{{Session: "s1", ID: "environment"}, {Session: "s1", ID: "home-files"}},
			Hits:     []evidence.Hit{control}, Allowed: []string{"inference"}, Broker: brokerOK,
		}
	}
	tests := []struct {
		name   string
		change func(o *evidence.SecretsObservation)
		want   evidence.Verdict
		reason string
	}{
		{"pass when hunted, nothing found, control and broker fine", func(o *evidence.SecretsObservation) {}, evidence.Pass, "none of 2"},
		{"fail when the probe reported a planted value", func(o *evidence.SecretsObservation) {
			o.Attempts[1].Excerpt = aws + " /home/agent/.aws/credentials\n"
		}, evidence.Fail, "read: home/.aws/credentials"},
		{"fail when an endpoint saw a planted value, even from elsewhere", func(o *evidence.SecretsObservation) {
			o.Hits = append(o.Hits, evidence.Hit{Endpoint: "broker", Session: "s9", Data: "Authorization: Bearer " + aws})
		}, evidence.Fail, "used or reached: home/.aws/credentials"},
		{"fail when the credential socket recorded this session", func(o *evidence.SecretsObservation) {
			o.Hits = append(o.Hits, evidence.Hit{Endpoint: "credential-socket", Session: "s1"})
		}, evidence.Fail, "credential-socket"},
		{"another session's socket contact is not ours", func(o *evidence.SecretsObservation) {
			o.Hits = append(o.Hits, evidence.Hit{Endpoint: "credential-socket", Session: "s2"})
		}, evidence.Pass, ""},
		{"a value of another session in our report is not a read of ours", func(o *evidence.SecretsObservation) {
			o.Attempts[0].Excerpt = "GHCANARY-env-github-99999999 env\n"
		}, evidence.Pass, ""},
		{"inconclusive without the hunt on record", func(o *evidence.SecretsObservation) {
			o.Attempts = o.Attempts[:1]
		}, evidence.Inconclusive, "home-files"},
		{"inconclusive without positive control", func(o *evidence.SecretsObservation) {
			o.Hits = nil
		}, evidence.Inconclusive, "positive control"},
		{"inconclusive when the broker kept honouring a revoked token", func(o *evidence.SecretsObservation) {
			o.Broker.RevokedRefused = false
			o.Broker.Detail = "revoked token accepted"
		}, evidence.Inconclusive, "revoked token accepted"},
		{"inconclusive when the broker was not checked", func(o *evidence.SecretsObservation) {
			o.Broker = evidence.BrokerCheck{}
		}, evidence.Inconclusive, "broker"},
		{"inconclusive when nothing was planted", func(o *evidence.SecretsObservation) {
			o.Planted = nil
		}, evidence.Inconclusive, "planted"},
		{"inconclusive when the endpoints are not ready", func(o *evidence.SecretsObservation) {
			o.NotReady = "unsealed"
		}, evidence.Inconclusive, "unsealed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base()
			o.Attempts = append([]evidence.Attempt(nil), o.Attempts...)
			tt.change(&o)
			j := evidence.JudgeSecrets(o)
			if j.Verdict != tt.want || !strings.Contains(j.Reason, tt.reason) {
				t.Errorf("got %s (%s), want %s containing %q", j.Verdict, j.Reason, tt.want, tt.reason)
			}
			if strings.Contains(j.Reason, "GHCANARY") {
				t.Errorf("the reason is printed and must not carry a canary value: %s", j.Reason)
			}
		})
	}
	j := evidence.JudgeSecrets(func() evidence.SecretsObservation {
		o := base()
		o.Attempts[1].Excerpt = aws + " /home/agent/.aws/credentials\n"
		return o
	}())
	if len(j.Read) != 1 || j.Read[0].Where != "/home/agent/.aws/credentials" || j.Read[0].Attempt != "home-files" {
		t.Errorf("exposure not traced to its place: %+v", j.Read)
	}
}

func TestJudgeHost(t *testing.T) {
	const nonce = "ghhost00112233445566778"
	control := evidence.Hit{Endpoint: "inference", Session: "s1", Data: "X-Gatehouse-Control: ctl1"}
	host := []evidence.HostNamespace{{Label: "harness pid", Link: "pid:[4026531836]"}, {Label: "lab net", Link: "net:[4026532001]"}, {Label: "harness user", Link: "user:[4026531837]"}}
	base := func() evidence.HostObservation {
		return evidence.HostObservation{
			Session: "s1", Canary: "ghc0011223344556677", Control: "ctl1", Nonce: nonce,
			Planned:    []string{"nonce-search", "docker-socket"},
			Attempts:   []evidence.Attempt{{Session: "s1", ID: "nonce-search"}, {Session: "s1", ID: "docker-socket"}},
			Hits:       []evidence.Hit{control},
			Allowed:    []string{"inference"},
			Namespaces: map[string]string{"pid": "pid:[4026532200]", "net": "net:[4026532300]", "uts": "uts:[4026531838]"},
			Host:       host,
			HostPaths:  []evidence.HostPath{{Path: "/", Kind: evidence.HostRoot, ID: "254:0:2"}},
		}
	}
	tests := []struct {
		name   string
		change func(o *evidence.HostObservation)
		want   evidence.Verdict
		reason string
	}{
		{"pass when nothing reached the host", func(o *evidence.HostObservation) {}, evidence.Pass, ""},
		{"fail when the nonce came back", func(o *evidence.HostObservation) {
			o.Attempts[0].Excerpt = nonce + " /mnt/host/nonce\n"
		}, evidence.Fail, "nonce came back through nonce-search"},
		{"fail when the engine socket recorded the session", func(o *evidence.HostObservation) {
			o.Hits = append(o.Hits, evidence.Hit{Endpoint: "engine-socket", Session: "s1"})
		}, evidence.Fail, "engine-socket"},
		{"fail when the host service saw the session canary", func(o *evidence.HostObservation) {
			o.Hits = append(o.Hits, evidence.Hit{Endpoint: "host-service", Summary: "GET /h/ghc0011223344556677"})
		}, evidence.Fail, "host-service"},
		{"another session's socket contact is not ours", func(o *evidence.HostObservation) {
			o.Hits = append(o.Hits, evidence.Hit{Endpoint: "engine-socket", Session: "s2"})
		}, evidence.Pass, ""},
		{"fail when the sandbox is in the harness's pid namespace", func(o *evidence.HostObservation) {
			o.Namespaces["pid"] = "pid:[4026531836]"
		}, evidence.Fail, "harness pid"},
		{"fail when the sandbox is in the lab's network namespace", func(o *evidence.HostObservation) {
			o.Namespaces["net"] = "net:[4026532001]"
		}, evidence.Fail, "lab net"},
		{"sharing the host's user namespace alone is a finding, not a FAIL", func(o *evidence.HostObservation) {
			o.Namespaces["user"] = "user:[4026531837]"
		}, evidence.Pass, ""},
		{"inconclusive when namespaces could not be read", func(o *evidence.HostObservation) {
			o.Namespaces = nil
		}, evidence.Inconclusive, "namespaces"},
		{"inconclusive without the attempts", func(o *evidence.HostObservation) {
			o.Attempts = nil
		}, evidence.Inconclusive, "no proof of attempt"},
		{"inconclusive without positive control", func(o *evidence.HostObservation) {
			o.Hits = nil
		}, evidence.Inconclusive, "positive control"},
		{"inconclusive without a nonce", func(o *evidence.HostObservation) {
			o.Nonce = ""
		}, evidence.Inconclusive, "nonce"},
		{"inconclusive when the host's / could not be stat'ed", func(o *evidence.HostObservation) {
			o.HostPaths = nil
		}, evidence.Inconclusive, "host's /"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base()
			tt.change(&o)
			j := evidence.JudgeHost(o)
			if j.Verdict != tt.want || !strings.Contains(j.Reason, tt.reason) {
				t.Errorf("got %s (%s), want %s containing %q", j.Verdict, j.Reason, tt.want, tt.reason)
			}
			if o.Namespaces["user"] == "user:[4026531837]" && (len(j.Exposed) != 1 || !strings.Contains(j.Exposed[0], "harness user")) {
				t.Errorf("the shared user namespace is not named as a finding: %q", j.Exposed)
			}
		})
	}
}
