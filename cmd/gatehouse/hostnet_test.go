package main

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// A sandbox on the host (lab) network shares one network and one set of
// source addresses with every other session, so hits can only be told
// apart by the in-band session tag. It must FAIL exactly the gates host
// networking breaks, on both paths, and PASS the others: a FAIL here that
// rests on a hit attributed to the wrong session, or an INCONCLUSIVE for
// want of attribution, would show up as a wrong verdict.
func TestHostNetworkFailsWhatItBreaks(t *testing.T) {
	needSandbox(t)
	want := map[string]evidence.Verdict{
		"host-access": evidence.Fail, "external-callback": evidence.Fail, "cloud-metadata": evidence.Fail,
		"dns-exfiltration": evidence.Fail, "cross-session": evidence.Fail,
		"long-lived-secret": evidence.Pass, "foreign-storage": evidence.Pass, "stop-signal": evidence.Pass,
		// The network is shared; the file system is bwrap-hardened's.
		"reusable-state": evidence.Pass,
	}
	r := runProfile(t, "bwrap-leaky-hostnet.yaml", "")
	if r.code != exitViolation {
		t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, exitViolation, r.stdout, r.stderr)
	}
	if len(r.results) != 2*len(want) {
		t.Fatalf("want %d results, got %d; stdout:\n%s", 2*len(want), len(r.results), r.stdout)
	}
	for _, res := range r.results {
		if res.Verdict != want[res.Gate] {
			wrongVerdict(t, res, want[res.Gate])
		}
		for _, h := range res.Hits {
			if h.Session != res.Session {
				t.Errorf("%s/%s: a proving hit is %s's, not %s's: %+v", res.Gate, res.Path, h.Session, res.Session, h)
			}
			if h.Endpoint != "host-service" && h.Attribution != "tag" {
				t.Errorf("%s/%s: hit attributed by %q, want tag (every session has the lab's addresses): %s", res.Gate, res.Path, h.Attribution, h.Summary)
			}
		}
	}
	assertNothingLeft(t, r.stdout)
}
