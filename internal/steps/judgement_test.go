package steps_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/steps"
	"github.com/gatehouse-dev/gatehouse/internal/steps/steptest"
	"github.com/gatehouse-dev/gatehouse/targets/fake"
)

// Every gate family's verdict is made once, after the suite, from what its
// judge step observed and the lab's whole record. Through the fake
// sandboxes, for each family: with nothing more recorded, the final
// verdict is the provisional one, unchanged; a hit recorded after the
// step-time verdict (a late packet) is judged by the gate's own rules and
// turns the final verdict to FAIL, saying what it was. The two-session
// gates' verdicts (foreign-storage, cross-session, reusable-state) rest on
// what the sessions reported, the lab's hits deciding only their positive
// controls: a late forbidden hit leaves them as they were. (stop-signal and the rehearsal need a real sandbox and
// lab to reach their judge step; judgement_internal_test.go covers them.)
func TestOneVerdictFromTheWholeRecord(t *testing.T) {
	callback := func(session string) evidence.Hit {
		return evidence.Hit{Time: time.Now(), Endpoint: "callback", Proto: "udp", Session: session, Summary: "udp 12 bytes"}
	}
	socket := func(endpoint string) func(string) evidence.Hit {
		return func(session string) evidence.Hit {
			return evidence.Hit{Time: time.Now(), Endpoint: endpoint, Proto: "unix", Session: session, Summary: "connect"}
		}
	}
	completed := func(*fake.Session, wire.Step) wire.Report { return wire.Report{Outcome: wire.OutcomeCompleted} }
	places := func(gate string, answer func(*fake.Session, wire.Step) wire.Report, broker bool, sp steps.SecretProcess) func(*testing.T) (*steps.Outcome, *steptest.Lab) {
		return func(t *testing.T) (*steps.Outcome, *steptest.Lab) {
			fl := &steptest.Lab{}
			if broker {
				fl.CredBroker = lab.NewBroker(lab.BrokerOptions{})
			}
			return runPlacesOutcome(t, fl, placeSandbox(fl, answer), sp, gate), fl
		}
	}
	tests := []struct {
		name        string
		run         func(*testing.T) (*steps.Outcome, *steptest.Lab)
		provisional evidence.Verdict
		late        func(session string) evidence.Hit
		final       evidence.Verdict // with the late hit
	}{
		{"network: a late forbidden contact fails a pass", func(t *testing.T) (*steps.Outcome, *steptest.Lab) {
			tgt := &fake.Target{Lab: &steptest.Lab{}, Deliver: onlyControl}
			return runFake(t, tgt, "external-callback"), labOf(tgt)
		}, evidence.Pass, callback, evidence.Fail},
		{"network: a late forbidden contact fails an inconclusive", func(t *testing.T) (*steps.Outcome, *steptest.Lab) {
			tgt := &fake.Target{Lab: &steptest.Lab{}, Deliver: func(wire.Step) bool { return false }}
			return runFake(t, tgt, "dns-exfiltration"), labOf(tgt)
		}, evidence.Inconclusive, callback, evidence.Fail},
		{"secrets: a late use of the credential socket fails a pass",
			places("long-lived-secret", completed, true, steps.SecretProcess{Where: "inside", User: "agent"}),
			evidence.Pass, socket("credential-socket"), evidence.Fail},
		// The fake's namespaces cannot be read from outside: INCONCLUSIVE.
		{"host: a late contact with the engine socket fails an inconclusive",
			places("host-access", completed, false, steps.SecretProcess{}),
			evidence.Inconclusive, socket("engine-socket"), evidence.Fail},
		{"exchange: a late forbidden contact changes nothing the sessions reported",
			places("foreign-storage", func(s *fake.Session, st wire.Step) wire.Report {
				if st.ID == "own-storage" {
					return ownNonce(s.Spec())
				}
				return denied()
			}, false, steps.SecretProcess{}),
			evidence.Pass, callback, evidence.Pass},
		{"persistence: a late forbidden contact changes nothing the later session reported",
			places("reusable-state", completed, false, steps.SecretProcess{}),
			evidence.Inconclusive, callback, evidence.Inconclusive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, fl := tt.run(t)
			provisional := append([]evidence.Result(nil), out.Results...)
			for _, r := range provisional {
				if strings.Contains(r.Reason, "stopped before a verdict") {
					t.Fatalf("%s/%s never reached its judge step: %s", r.Gate, r.Path, r.Reason)
				}
				if r.Verdict != tt.provisional {
					t.Fatalf("%s/%s: provisional %s (%s), want %s", r.Gate, r.Path, r.Verdict, r.Reason, tt.provisional)
				}
			}
			if n := out.Judge(fl.Hits()); n != 0 {
				t.Errorf("nothing more recorded, yet %d verdict(s) changed", n)
			}
			if !reflect.DeepEqual(out.Results, provisional) {
				t.Errorf("nothing more recorded, yet the final results differ from the provisional ones:\n%+v\n%+v", out.Results, provisional)
			}
			late := provisional[0]
			fl.Add(tt.late(late.Session))
			changed := 0
			if tt.final != late.Verdict {
				changed = 1
			}
			if n := out.Judge(fl.Hits()); n != changed {
				t.Errorf("%d verdict(s) changed by one late hit, want %d", n, changed)
			}
			for i, r := range out.Results {
				want, p := provisional[i].Verdict, provisional[i]
				if r.Session == late.Session {
					want = tt.final
				}
				if r.Verdict != want {
					t.Errorf("%s/%s (%s): %s (%s), want %s", r.Gate, r.Path, r.Session, r.Verdict, r.Reason, want)
				}
				if r.Verdict != p.Verdict && !strings.Contains(r.Reason, "changed from "+string(p.Verdict)) {
					t.Errorf("%s/%s: the reason does not say what the verdict was: %s", r.Gate, r.Path, r.Reason)
				}
				if r.Verdict == evidence.Fail && len(r.Hits) == 0 {
					t.Errorf("%s/%s: a FAIL with no violating hit named", r.Gate, r.Path)
				}
			}
			// The same record judged again: the same verdicts.
			again := append([]evidence.Result(nil), out.Results...)
			if n := out.Judge(fl.Hits()); n != 0 || !reflect.DeepEqual(out.Results, again) {
				t.Errorf("judging the same record again changed %d verdict(s)", n)
			}
		})
	}
}
