package steps_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/features"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/steps"
	"github.com/gatehouse-dev/gatehouse/internal/steps/steptest"
	"github.com/gatehouse-dev/gatehouse/targets/fake"
)

// takedownOutput is a probe that answers takedown steps with report and
// every other step honestly (a timeout); it notes the sessions whose
// takedown ran in ran.
func takedownOutput(report func(control string) (string, string, string), ran *sync.Map) func(wire.Plan, io.Writer) error {
	return func(p wire.Plan, w io.Writer) error {
		enc := json.NewEncoder(w)
		for _, st := range p.Steps {
			if st.Kind == wire.KindTakedown {
				ran.Store(p.Session, true)
			}
			rep := fake.Blocked(st)
			if st.Kind == wire.KindTakedown {
				if len(st.Outside) == 0 || len(st.Spare) == 0 {
					rep.Outcome, rep.Error = wire.OutcomeError, "the harness named no outside namespaces or spared tables"
				} else if rep.Outcome, rep.Excerpt, rep.Error = report(st.Target); rep.Outcome == "" {
					continue // the probe drops this report
				}
			}
			if err := enc.Encode(rep); err != nil {
				return err
			}
		}
		return nil
	}
}

// listTables is the outside view of a session's tables: with flushes, the
// egress table is gone once the session's takedown ran.
func listTables(flushes bool, ran *sync.Map) func(string) ([]string, error) {
	return func(session string) ([]string, error) {
		if _, ran := ran.Load(session); ran && flushes {
			return []string{"inet gatehouse_acct"}, nil
		}
		return []string{"inet gatehouse_acct", "inet gatehouse_egress"}, nil
	}
}

// The takedown through the steps: on the assume-breach path only, the
// probe is asked to take down each control (with the namespaces it must
// stay out of), then every attempt is made again; what arrives after a
// flush FAILs with the layer named, a takedown the kernel refused leaves
// a PASS, and one the probe does not report cannot PASS. Each gate keeps
// exactly one result per path.
func TestTakedownWithFakeSandboxes(t *testing.T) {
	flushAll := func(c string) (string, string, string) {
		if c == wire.TakedownNftables {
			return wire.OutcomeCompleted, wire.TakedownChanged + "delete table inet gatehouse_egress\n" + wire.TakedownSkipped + "table inet gatehouse_acct: spared", ""
		}
		return wire.OutcomeDenied, wire.TakedownRefused + c + ": operation not permitted", "the kernel refused every change: operation not permitted"
	}
	refuseAll := func(c string) (string, string, string) {
		return wire.OutcomeDenied, wire.TakedownRefused + c + ": operation not permitted", "the kernel refused every change: operation not permitted"
	}
	dropNft := func(c string) (string, string, string) {
		if c == wire.TakedownNftables {
			return "", "", ""
		}
		return refuseAll(c)
	}
	tests := []struct {
		name    string
		report  func(string) (string, string, string)
		flushes bool // seen from outside, the egress table is gone after
		leaks   bool // forbidden attempts arrive after the takedown
		breach  evidence.Verdict
		reason  string
		finding string
		// reach is the run plan's word for the assume-breach path; plan is
		// the finding that holds it against what happened ("" for none).
		reach map[string]string
		plan  string
	}{
		{"root flushes the ruleset and the callback hears it", flushAll, true, true, evidence.Fail,
			"egress ruleset flushed from inside: the policy is not an outer layer (seen from outside: table inet gatehouse_egress gone); after it:", "takedown nftables (root in the guest): fell: delete table inet gatehouse_egress",
			map[string]string{"egress ruleset": "inside"}, "plan confirmed: the egress ruleset is within the guest's reach"},
		{"root flushes the ruleset and nothing arrives", flushAll, true, false, evidence.Pass,
			"still nothing forbidden arrived", "takedown remount (root in the guest): held",
			map[string]string{"egress ruleset": "outside"}, "plan wrong: the plan puts the egress ruleset outside the guest's reach"},
		{"the kernel refuses every takedown", refuseAll, false, false, evidence.Pass,
			"changed none", "takedown nftables (root in the guest): held",
			map[string]string{"egress ruleset": "inside", "mounts (binds and read-only flags)": "outside"}, "plan not borne out: the plan puts the egress ruleset within the guest's reach"},
		{"the probe leaves the ruleset's takedown unreported", dropNft, false, false, evidence.Inconclusive,
			"no report for nftables", "takedown nftables: no report from the probe", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ran := &sync.Map{}
			fl := &steptest.Lab{ListTables: listTables(tt.flushes, ran)}
			tgt := &fake.Target{Lab: fl, Output: takedownOutput(tt.report, ran), Deliver: func(st wire.Step) bool {
				return st.ID == "positive-control" || (tt.leaks && strings.HasSuffix(st.ID, "@after-takedown"))
			}}
			gates := []string{"external-callback", "dns-exfiltration", "cloud-metadata"}
			out, err := steps.Run(context.Background(), steps.Config{
				Target: tgt, Network: steps.NetLab, Lab: fl,
				ProbePath: "/bin/true", Features: features.FS, Gates: gates, Settle: 1, Concurrency: 1, BreachReach: tt.reach,
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Results) != 2*len(gates) {
				t.Fatalf("want one result per gate and path, got %d", len(out.Results))
			}
			for _, r := range out.Results {
				if r.Path == "normal" {
					if r.Verdict != evidence.Pass || r.Takedown != nil {
						t.Errorf("%s/normal: %s (%s), takedown %v: the normal path takes nothing down", r.Gate, r.Verdict, r.Reason, r.Takedown)
					}
					continue
				}
				if r.Verdict != tt.breach || !strings.Contains(r.Reason, tt.reason) {
					t.Errorf("%s/assume-breach: %s (%s), want %s with %q", r.Gate, r.Verdict, r.Reason, tt.breach, tt.reason)
				}
				if r.Takedown == nil || !hasPrefix(r.Findings, tt.finding) {
					t.Errorf("%s/assume-breach: takedown %+v, findings %q: want one starting %q", r.Gate, r.Takedown, r.Findings, tt.finding)
				}
				if tt.plan != "" && !hasPrefix(r.Findings, tt.plan) {
					t.Errorf("%s/assume-breach: findings %q: want one starting %q", r.Gate, r.Findings, tt.plan)
				}
				if tt.plan == "" && hasPrefix(r.Findings, "plan ") {
					t.Errorf("%s/assume-breach: a plan finding without a plan: %q", r.Gate, r.Findings)
				}
				if tt.leaks && r.Verdict == evidence.Fail && len(r.Hits) == 0 {
					t.Errorf("%s: FAIL without hits", r.Gate)
				}
			}
		})
	}
}

func hasPrefix(list []string, p string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// A lab that cannot list a session's tables from outside (ErrUnsupported)
// leaves the takedown without an outside view, and the scenario says so:
// which layer fell then rests on the probe's report.
func TestTakedownWithoutTheOutsideView(t *testing.T) {
	ran := &sync.Map{}
	flushAll := func(c string) (string, string, string) {
		if c == wire.TakedownNftables {
			return wire.OutcomeCompleted, wire.TakedownChanged + "delete table inet gatehouse_egress", ""
		}
		return wire.OutcomeDenied, wire.TakedownRefused + c + ": operation not permitted", "the kernel refused every change: operation not permitted"
	}
	fl := &steptest.Lab{}
	tgt := &fake.Target{Lab: fl, Output: takedownOutput(flushAll, ran), Deliver: onlyControl}
	out, err := steps.Run(context.Background(), steps.Config{
		Target: tgt, Network: steps.NetLab, Lab: fl,
		ProbePath: "/bin/true", Features: features.FS, Gates: []string{"external-callback"}, Settle: 1, Concurrency: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Results {
		t.Logf("%s: %s (%s) findings %q", r.Path, r.Verdict, r.Reason, r.Findings)
		if r.Path == "normal" {
			continue
		}
		if r.Takedown == nil || r.Takedown.Outside != nil || !strings.Contains(r.Takedown.OutsideError, "cannot list the session's nftables tables") {
			t.Errorf("takedown %+v: want no outside view and the reason", r.Takedown)
		}
		if !hasPrefix(r.Findings, "takedown: the harness cannot list") {
			t.Errorf("findings %q: want the missing outside view said", r.Findings)
		}
	}
}
