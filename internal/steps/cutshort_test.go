package steps_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/steps/steptest"
	"github.com/gatehouse-dev/gatehouse/targets/fake"
)

// On a loaded machine a read of a host path ran out of its time and
// host-access counted it as made: a PASS from a read that never reached
// the place (issue 22, C1). A read cut short is tried again with twice the
// time; one still cut leaves the gate INCONCLUSIVE, never PASS.
func TestCutShortReadsAreTriedAgainNeverPassed(t *testing.T) {
	tests := []struct {
		name   string
		cuts   int    // how many tries of host-path are cut before the kernel answers
		cut    string // how: a timeout or a machine short of something
		want   evidence.Verdict
		reason string
	}{
		{"answered at once", 0, "", evidence.Pass, ""},
		{"out of time once, answered on the second try", 1, "timeout", evidence.Pass, ""},
		{"short of memory once, answered on the second try", 1, "open /x: cannot allocate memory", evidence.Pass, ""},
		{"out of time every time proves nothing", 100, "timeout", evidence.Inconclusive, "host-path"},
		{"short of I/O every time proves nothing", 100, "read /x: input/output error", evidence.Inconclusive, "host-path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			tries := map[string]int{}
			// Namespaces of its own, none the host's: read back and compared.
			tgt := &fake.Target{Lab: &steptest.Lab{}, Deliver: onlyControl, Facts: map[string]string{
				"outside.ns.pid": "pid:[1]", "outside.ns.net": "net:[2]", "outside.ns.mnt": "mnt:[3]",
				"outside.ns.ipc": "ipc:[4]", "outside.ns.uts": "uts:[5]", "outside.ns.user": "user:[6]", "outside.ns.cgroup": "cgroup:[7]",
			}}
			tgt.Answer = func(s *fake.Session, st wire.Step) wire.Report {
				rep := wire.Report{Outcome: wire.OutcomeCompleted}
				switch st.Kind {
				case wire.KindRead:
					rep.Outcome, rep.Error = wire.OutcomeError, "open "+st.Target+": no such file or directory"
					if st.ID == "host-path" {
						mu.Lock()
						tries[s.Spec().Name]++
						n := tries[s.Spec().Name]
						mu.Unlock()
						if n <= tt.cuts {
							rep.Outcome, rep.Error = wire.OutcomeError, tt.cut
							if tt.cut == "timeout" {
								rep.Outcome, rep.Error = wire.OutcomeTimeout, "context deadline exceeded"
							}
						}
					}
				case wire.KindHunt, wire.KindFind, wire.KindHostCheck:
					rep.Outcome = wire.OutcomeCompleted
				default:
					rep = fake.Blocked(st)
				}
				return rep
			}
			out := runFake(t, tgt, "host-access")
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
