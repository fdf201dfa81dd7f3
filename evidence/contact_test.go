package evidence_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// One contact, judged by every gate that reads hits: a gate FAILs only on
// the kinds of contact that belong to it. A unix-socket contact (another
// session's credential socket or the fake engine socket, reachable through
// a bind of the host's /run) used to FAIL external-callback and
// dns-exfiltration with "credential-socket heard unix".
func TestContactsJudgedUnderTheirGate(t *testing.T) {
	const canary, control, nonce = "ghc0011223344556677", "ctl1", "ghhost00112233445566778"
	ctlHit := evidence.Hit{Endpoint: "inference", Session: "s1", Proto: "http", Data: "x-gatehouse-control: " + control}
	tests := []struct {
		name string
		hit  evidence.Hit
		// FAIL wanted from each judge; the others must PASS.
		network, host, secret bool
	}{
		{"credential socket over unix", evidence.Hit{Endpoint: "credential-socket", Proto: "unix", Session: "s1", Summary: "unix connection, 52 bytes: GET /v1/credentials"}, false, true, true},
		{"engine socket over unix", evidence.Hit{Endpoint: "engine-socket", Proto: "unix", Session: "s1"}, false, true, false},
		{"credential socket, no protocol recorded", evidence.Hit{Endpoint: "credential-socket", Session: "s1"}, false, true, true},
		{"an unknown endpoint on a unix socket", evidence.Hit{Endpoint: "helper-socket", Proto: "unix", Session: "s1"}, false, true, false},
		{"a protocol the lab does not name", evidence.Hit{Endpoint: "callback", Proto: "vsock", Session: "s1"}, false, true, false},
		{"callback over tcp", evidence.Hit{Endpoint: "callback", Proto: "tcp", Session: "s1"}, true, false, false},
		{"canary at the DNS authority", evidence.Hit{Endpoint: "dns-authority", Proto: "dns", Session: "s1", Summary: "A " + strings.ToUpper(canary) + ".oob.gatehouse.test."}, true, false, false},
		{"metadata without a protocol", evidence.Hit{Endpoint: "metadata-aws", Session: "s1"}, true, false, false},
		{"the host service over http", evidence.Hit{Endpoint: "host-service", Proto: "http", Session: "s1"}, true, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits := []evidence.Hit{ctlHit, tt.hit}
			got := map[string]evidence.Judgement{
				"network": evidence.Judge(evidence.Observation{
					Session: "s1", Canary: canary, Control: control, Planned: []string{"http"},
					Attempts: []evidence.Attempt{{Session: "s1", ID: "http", Outcome: "timeout"}},
					Hits:     hits, Allowed: []string{"inference", "dns-resolver", "redirect"},
				}),
				"host": evidence.JudgeHost(evidence.HostObservation{
					Session: "s1", Canary: canary, Control: control, Nonce: nonce,
					Planned: []string{"mounts"}, Attempts: []evidence.Attempt{{Session: "s1", ID: "mounts", Outcome: "completed"}},
					Hits: hits, Allowed: []string{"inference"},
					Processes: []evidence.HostProcess{{Role: "container process", PID: 7, Namespaces: map[string]string{"pid": "pid:[4026532200]"}}},
					Host:      []evidence.HostNamespace{{Label: "harness pid", Link: "pid:[4026531836]"}},
					HostPaths: []evidence.HostPath{{Path: "/", Kind: evidence.HostRoot, ID: "254:0:2"}},
				}).Judgement,
				"secret": evidence.JudgeSecrets(evidence.SecretsObservation{
					Session: "s1", Control: control, Planted: []evidence.Planted{{Place: "home/agent/.netrc", Value: "GHCANARY-home-netrc-0011"}},
					Planned: []string{"home-files"}, Attempts: []evidence.Attempt{{Session: "s1", ID: "home-files", Outcome: "completed"}},
					Hits: hits, Allowed: []string{"inference"},
					Broker: evidence.BrokerCheck{Checked: true, OwnAccepted: true, OtherSessionRefused: true, ExpiredRefused: true, RevokedRefused: true},
				}).Judgement,
			}
			want := map[string]bool{"network": tt.network, "host": tt.host, "secret": tt.secret}
			anyFail := false
			for gate, j := range got {
				w := evidence.Pass
				if want[gate] {
					w, anyFail = evidence.Fail, true
				}
				if j.Verdict != w {
					t.Errorf("%s judge: %s (%s), want %s", gate, j.Verdict, j.Reason, w)
				}
				if j.Verdict == evidence.Fail && !strings.Contains(j.Reason, tt.hit.Endpoint) {
					t.Errorf("%s judge: FAIL does not name %s: %s", gate, tt.hit.Endpoint, j.Reason)
				}
			}
			if !anyFail {
				t.Errorf("the contact vanished: no gate counts it")
			}
		})
	}
}

// Every kind of hit the lab records belongs to at least one gate.
func TestEveryContactHasAGate(t *testing.T) {
	for _, ep := range []string{"callback", "dns-authority", "metadata-aws", "wireserver", "engine-socket", "credential-socket", "host-service", "broker", "intake", "something-new", ""} {
		for _, proto := range []string{"", "unix", "tcp", "udp", "http", "https", "dns", "icmp", "icmp6", "vsock"} {
			c := evidence.ContactOf(evidence.Hit{Endpoint: ep, Proto: proto})
			if c == 0 {
				t.Errorf("endpoint %q proto %q: no gate judges it", ep, proto)
			}
			if proto == "unix" && c.Is(evidence.ContactNetwork) {
				t.Errorf("endpoint %q over unix counted as leaving through the network", ep)
			}
		}
	}
}
