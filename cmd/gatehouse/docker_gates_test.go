package main

import (
	"os"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/targets/docker"
)

// allGates are the nine gates, each run on both paths.
const allGates = 9

// TestAllGatesOnDockerProfiles runs every gate on both paths against the
// docker profiles. docker-leaky must FAIL each with its proof (a hit, a
// crossing, or the namespace / nonce the reason names). docker-hardened
// must PASS each with a positive control; its container shares the host's
// user namespace (Docker's default without --userns-remap, see
// docs/docker.md), which host-access records as an "exposed:" finding, not
// as host access. gvisor-hardened must PASS every gate too, host-access
// from runsc's own processes (the sentry and the gofer, named in the
// evidence), and `gatehouse gate` must then allow its release.
func TestAllGatesOnDockerProfiles(t *testing.T) {
	needDocker(t)
	type want struct {
		verdict evidence.Verdict
		reason  string // a substring the reason must hold
	}
	hardened := func(gate string) want { return want{evidence.Pass, ""} }
	tests := []struct {
		profile string
		want    func(gate string) want
	}{
		{"docker-hardened.yaml", hardened},
		{"docker-leaky.yaml", func(string) want { return want{evidence.Fail, ""} }},
		{"gvisor-hardened.yaml", func(gate string) want {
			if gate == "host-access" {
				return want{evidence.Pass, "no host namespace shared by gVisor sentry pid"}
			}
			return want{evidence.Pass, ""}
		}},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.profile, ".yaml"), func(t *testing.T) {
			if strings.HasPrefix(tt.profile, "gvisor") {
				if _, err := os.Stat(docker.RunscPath); err != nil {
					t.Skip("runsc not installed (scripts/runsc.sh builds it)")
				}
			}
			var pub string
			var extra []string
			if strings.HasPrefix(tt.profile, "gvisor") {
				pub, extra = signingKey(t)
			}
			r := runProfile(t, tt.profile, "", extra...)
			if !strings.HasPrefix(r.run.ImageDigest, "sha256:") {
				t.Errorf("run.json names no image digest (%q): the evidence must say which image ran", r.run.ImageDigest)
			}
			if code := exitFor(r.results); r.code != code {
				t.Errorf("exit %d, want %d for these verdicts", r.code, code)
			}
			if len(r.results) != 2*allGates {
				t.Fatalf("want %d results (9 gates x 2 paths), got %d; stdout:\n%s\nstderr:\n%s", 2*allGates, len(r.results), r.stdout, r.stderr)
			}
			for _, res := range r.results {
				w := tt.want(res.Gate)
				if res.Verdict != w.verdict || !strings.Contains(res.Reason, w.reason) {
					t.Errorf("%s/%s: %s (%s), want %s with %q", res.Gate, res.Path, res.Verdict, res.Reason, w.verdict, w.reason)
					continue
				}
				switch res.Verdict {
				case evidence.Pass:
					if !res.Control {
						t.Errorf("%s/%s: PASS without a positive control", res.Gate, res.Path)
					}
				case evidence.Fail:
					if len(res.Hits) == 0 && len(res.Crossings) == 0 && !proofInReason(res) {
						t.Errorf("%s/%s: FAIL without proof: %s", res.Gate, res.Path, res.Reason)
					}
				}
				if tt.profile == "docker-hardened.yaml" && res.Gate == "host-access" && !hasPrefix(res.Findings, "exposed: the sandbox shares the harness user namespace") {
					t.Errorf("host-access on docker-hardened does not record the shared user namespace: %q", res.Findings)
				}
				if tt.profile == "gvisor-hardened.yaml" && res.Gate == "host-access" {
					checkGvisorCompared(t, res)
				}
			}
			if tt.profile == "docker-leaky.yaml" {
				checkLeakyProofs(t, r.results)
			}
			if pub != "" {
				checkReleaseAllowed(t, tt.profile, r, pub)
			}
			assertNothingLeft(t, r.stdout)
		})
	}
}

// proofInReason: FAILs whose proof is a namespace read from the host or
// a planted value read back (no endpoint hit needed).
func proofInReason(res evidence.Result) bool {
	return strings.Contains(res.Reason, "namespace") || strings.Contains(res.Reason, "planted credentials read") || strings.Contains(res.Reason, "nonce came back")
}

// checkLeakyProofs: the mistakes docker-leaky ships are the ones caught.
func checkLeakyProofs(t *testing.T, results []evidence.Result) {
	t.Helper()
	otherProcess := false
	for _, res := range results {
		if res.Gate == "long-lived-secret" && strings.Contains(res.Reason, "process/DB_PASSWORD") {
			otherProcess = true
		}
	}
	if !otherProcess {
		t.Errorf("long-lived-secret: no path read the other process's DB_PASSWORD (host pid + SYS_PTRACE)")
	}
	for _, res := range results {
		var need []string
		switch res.Gate {
		case "host-access":
			need = []string{"engine-socket", "nonce came back", "harness pid"}
		case "long-lived-secret":
			// process/DB_PASSWORD is checked over both paths below: the
			// sleeper holding it may not be up when one hunt runs.
			need = []string{"env/AWS_SECRET_ACCESS_KEY", "home/agent/.aws/credentials", "serviceaccount/token"}
		case "stop-signal":
			need = []string{"still acting", "escaped child"}
		case "foreign-storage":
			need = []string{"/storage/"}
		}
		for _, n := range need {
			if !strings.Contains(res.Reason, n) {
				t.Errorf("%s/%s: reason lacks %q: %s", res.Gate, res.Path, n, res.Reason)
			}
		}
	}
}

// exitFor is the exit code run must give for a set of verdicts.
func exitFor(rs []evidence.Result) int {
	code := exitOK
	for _, r := range rs {
		switch r.Verdict {
		case evidence.Fail:
			return exitViolation
		case evidence.Inconclusive:
			code = exitInconclusive
		}
	}
	return code
}
