package steps_test

import (
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/steps/steptest"
	"github.com/gatehouse-dev/gatehouse/targets/fake"
)

// A sandbox's egress proxy that lets a name through connects onward
// first; on a loaded machine srt's took longer than the attempt's time,
// the rebinding try never reached the callback, and the wildcard profile
// PASSed external-callback (issue 22). A proxy attempt that timed out is
// tried again; one that still times out leaves the gate INCONCLUSIVE,
// never PASS.
func TestStalledProxyAttemptsAreTriedAgainNeverPassed(t *testing.T) {
	tests := []struct {
		name    string
		stalls  int  // how many tries of proxy-rebind time out before it goes through
		gateway bool // the stalled tries answer 502 (the proxy's own step onward failed)
		want    evidence.Verdict
		reason  string
	}{
		{"a proxy slow once is tried again and the leak is seen", 1, false, evidence.Fail, "callback"},
		{"a proxy slow twice is tried again and the leak is seen", 2, false, evidence.Fail, "callback"},
		{"a proxy that never answers proves nothing", 100, false, evidence.Inconclusive, "neither answered nor refused proxy-rebind"},
		{"a proxy whose lookup onward failed once is tried again and the leak is seen", 1, true, evidence.Fail, "callback"},
		{"a proxy whose lookup onward always fails proves nothing", 100, true, evidence.Inconclusive, "neither answered nor refused proxy-rebind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			tries := map[string]int{} // per session
			fl := &steptest.Lab{}
			tgt := &fake.Target{Lab: fl, Deliver: onlyControl}
			tgt.Output = func(p wire.Plan, w io.Writer) error {
				enc := json.NewEncoder(w)
				for _, st := range p.Steps {
					rep := wire.Report{ID: st.ID, Kind: st.Kind, Target: st.Target, Start: time.Now()}
					switch {
					case st.ID == "proxy-rebind":
						mu.Lock()
						tries[p.Session]++
						n := tries[p.Session]
						mu.Unlock()
						if n <= tt.stalls {
							rep.Outcome = "timeout"
							if tt.gateway {
								// After the proxy's own lookup timed out.
								rep.Outcome, rep.Status, rep.Error, rep.DurationMS = "denied", 502, "proxy refused: CONNECT answered 502", 2500
							}
							break
						}
						// Through at last: the callback hears it.
						rep.Outcome, rep.Status = "completed", 200
						fl.Add(evidence.Hit{Time: time.Now(), Endpoint: "callback", Session: p.Session, Proto: "http", Src: "198.51.100.2", Summary: "GET /x/" + p.Canary, Data: p.Canary})
					case st.Kind == wire.KindProxy:
						rep.Outcome, rep.Status = "denied", 403 // the proxy refused it
					default:
						rep.Outcome = "timeout"
					}
					if err := enc.Encode(rep); err != nil {
						return err
					}
				}
				return nil
			}
			out := runFake(t, tgt, "external-callback")
			if len(out.Results) != 2 {
				t.Fatalf("want 2 results, got %+v", out.Results)
			}
			for _, r := range out.Results {
				if r.Verdict != tt.want || !strings.Contains(r.Reason, tt.reason) {
					t.Errorf("%s: %s (%s), want %s naming %q", r.Path, r.Verdict, r.Reason, tt.want, tt.reason)
				}
			}
		})
	}
}
