package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// TestAssumeBreachTakedown: on the assume-breach path root in the guest
// first tries to take down every control within its reach, then every
// attempt is made again. A profile whose root holds CAP_NET_ADMIN over
// the namespace that holds the egress ruleset (testdata breach-net-admin:
// docker-hardened plus that one capability) must FAIL the network gates on
// that path only, with the flush seen from outside and the forbidden
// contacts after it; the normal path still PASSes. bwrap-hardened (its
// ruleset lives in a namespace the host's user namespace owns) and a
// harmless capability (breach-chown) must PASS, the takedown tried and
// refused by the kernel.
func TestAssumeBreachTakedown(t *testing.T) {
	needSandbox(t)
	gates := "external-callback,dns-exfiltration,cloud-metadata"
	tests := []struct {
		name    string
		profile string
		docker  bool
		breach  evidence.Verdict // every network gate on the assume-breach path
		reason  string           // what the assume-breach reason must say
	}{
		{"bwrap-hardened", profilePath("bwrap-hardened.yaml"), false, evidence.Pass, "changed none"},
		{"breach-net-admin", filepath.Join("testdata", "profiles", "breach-net-admin.yaml"), true, evidence.Fail,
			"egress ruleset flushed from inside: the policy is not an outer layer (seen from outside: table inet gatehouse_egress gone)"},
		{"breach-chown", filepath.Join("testdata", "profiles", "breach-chown.yaml"), true, evidence.Pass, "changed none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.docker {
				needDocker(t)
			}
			r := runProfileAt(t, tt.profile, gates)
			if code := exitFor(r.results); r.code != code || (tt.breach == evidence.Fail) != (code == exitViolation) {
				t.Errorf("exit %d (verdicts say %d)\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
			}
			if len(r.results) != 6 {
				t.Fatalf("want 6 results (3 gates x 2 paths), got %d; stdout:\n%s\nstderr:\n%s", len(r.results), r.stdout, r.stderr)
			}
			for _, res := range r.results {
				if res.Path == "normal" {
					if res.Verdict != evidence.Pass || !res.Control || res.Takedown != nil {
						t.Errorf("%s/normal: %s (%s), takedown %v: want PASS with a positive control and no takedown", res.Gate, res.Verdict, res.Reason, res.Takedown)
					}
					continue
				}
				if res.Verdict != tt.breach || !strings.Contains(res.Reason, tt.reason) {
					t.Errorf("%s/assume-breach: %s (%s), want %s with %q", res.Gate, res.Verdict, res.Reason, tt.breach, tt.reason)
				}
				checkTakedown(t, res, tt.breach == evidence.Fail)
			}
			assertNothingLeft(t, r.stdout)
		})
	}
}

// checkTakedown: every control was tried and reported, the harness looked
// at the ruleset itself, and what it saw matches the verdict: flushed with
// the accounting spared and every forbidden contact after the takedown,
// or untouched with the kernel refusing the flush.
func checkTakedown(t *testing.T, res evidence.Result, flushed bool) {
	t.Helper()
	td := res.Takedown
	if td == nil || len(td.Missing) > 0 || len(td.Controls) != len(wire.TakedownControls) {
		t.Fatalf("%s: takedown %+v: want a report for each of %v", res.Gate, td, wire.TakedownControls)
	}
	if td.Outside == nil {
		t.Fatalf("%s: the harness did not read the ruleset from outside: %s", res.Gate, td.OutsideError)
	}
	// The run plan said where each control lives; what happened agrees.
	for _, f := range res.Findings {
		if strings.HasPrefix(f, "plan wrong:") {
			t.Errorf("%s: %s", res.Gate, f)
		}
	}
	if flushed && !slices.ContainsFunc(res.Findings, func(f string) bool { return strings.HasPrefix(f, "plan confirmed: the egress ruleset") }) {
		t.Errorf("%s: the flush does not confirm the plan's reach: %q", res.Gate, res.Findings)
	}
	gone := td.Outside.Removed()
	var nft evidence.ControlTakedown
	for _, c := range td.Controls {
		if c.Control == wire.TakedownNftables {
			nft = c
		}
	}
	if !flushed {
		if len(gone) > 0 || nft.State != evidence.TakedownHeld {
			t.Errorf("%s: tables removed %q, nftables %s: want the flush refused by the kernel", res.Gate, gone, nft.State)
		}
		return
	}
	if !slices.Equal(gone, []string{"inet gatehouse_egress"}) || !slices.Contains(td.Outside.After, "inet gatehouse_acct") {
		t.Errorf("%s: tables before %q, after %q: want the egress table gone and the lab's accounting kept", res.Gate, td.Outside.Before, td.Outside.After)
	}
	if len(res.Hits) == 0 {
		t.Fatalf("%s: FAIL without the hits that prove it", res.Gate)
	}
	for _, h := range res.Hits {
		if h.Time.Before(td.At) {
			t.Errorf("%s: forbidden contact before the takedown (the policy held until then): %+v", res.Gate, h)
		}
	}
}
