package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// plantedRE matches what long-lived-secret and host-access plant: canaries
// (GHCANARY-place-hex) and host nonces (ghhost + 16 hex).
var plantedRE = regexp.MustCompile(`GHCANARY-[A-Za-z0-9_-]{4,120}|ghhost[0-9a-f]{16}`)

// long-lived-secret and host-access, on both paths: FAIL on the leaky
// profiles with the evidence that proves it, PASS on the hardened one; no
// planted value in gatehouse's own output; nothing planted left behind.
func TestSecretsAndHostGatesOnBwrapProfiles(t *testing.T) {
	needSandbox(t)
	tests := []struct {
		profile, gates string
		code           int
		want           evidence.Verdict
		results        int
	}{
		{"bwrap-hardened.yaml", "long-lived-secret,host-access", exitOK, evidence.Pass, 4},
		{"bwrap-leaky.yaml", "long-lived-secret,host-access", exitViolation, evidence.Fail, 4},
		{"bwrap-leaky-hostnet.yaml", "host-access", exitViolation, evidence.Fail, 2},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.profile, ".yaml"), func(t *testing.T) {
			r := runProfile(t, tt.profile, tt.gates)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			if len(r.results) != tt.results {
				t.Fatalf("want %d results, got %d; stdout:\n%s\nstderr:\n%s", tt.results, len(r.results), r.stdout, r.stderr)
			}
			for _, res := range r.results {
				if res.Verdict != tt.want {
					wrongVerdict(t, res, tt.want)
					continue
				}
				checkSecretsProof(t, tt.profile, res)
			}
			planted := plantedValues(t, r.dir)
			if len(planted) == 0 {
				t.Fatal("traces/planted.jsonl names no planted value")
			}
			for _, v := range planted {
				// The random tail is the secret: no part of it may be printed.
				tail := v[len(v)-12:]
				if strings.Contains(r.stdout, tail) || strings.Contains(r.stderr, tail) {
					t.Errorf("a planted value appears in gatehouse's own output: %.24s…", v)
				}
			}
			if m := canaryRE.FindString(r.stdout + r.stderr); m != "" {
				t.Errorf("a canary-shaped value appears in gatehouse's own output: %.16s…", m)
			}
			if tt.want == evidence.Fail && strings.Contains(tt.gates, "long-lived-secret") {
				hits, _ := os.ReadFile(filepath.Join(r.dir, "traces", "endpoint-hits.jsonl"))
				if !anyIn(string(hits), planted) {
					t.Error("no endpoint recorded a planted value being used")
				}
			}
			if left := plantedLeft(planted); len(left) > 0 {
				t.Errorf("planted files left behind: %v", left)
			}
			assertNothingLeft(t, r.stdout)
		})
	}
}

// checkSecretsProof checks that a verdict carries what proves it.
func checkSecretsProof(t *testing.T, profile string, res evidence.Result) {
	t.Helper()
	switch {
	case res.Verdict == evidence.Pass:
		if !res.Control {
			t.Errorf("%s/%s: PASS without a positive control", res.Gate, res.Path)
		}
	case res.Gate == "long-lived-secret":
		// Read (named by place) and used (the hits that saw the value).
		if !strings.Contains(res.Reason, "read: ") || !strings.Contains(res.Reason, "home/agent/.aws/credentials") || len(res.Hits) == 0 {
			t.Errorf("%s/%s: FAIL without the read and use that prove it: %s (%d hits)", res.Gate, res.Path, res.Reason, len(res.Hits))
		}
		if !hasPrefix(res.Findings, "read: the canary planted at ") {
			t.Errorf("%s/%s: no finding traces the read to its place: %q", res.Gate, res.Path, res.Findings)
		}
	case profile == "bwrap-leaky-hostnet.yaml":
		if !hitOn(res.Hits, "host-service") || !strings.Contains(res.Reason, "lab net") {
			t.Errorf("%s/%s: hostnet FAIL should be proven by the host service and the shared lab namespace: %s", res.Gate, res.Path, res.Reason)
		}
	default:
		if !strings.Contains(res.Reason, "nonce came back") || !hitOn(res.Hits, "engine-socket") || !strings.Contains(res.Reason, "harness pid") {
			t.Errorf("%s/%s: FAIL without nonce, engine-socket hit and pid namespace: %s", res.Gate, res.Path, res.Reason)
		}
		if !hasPrefix(res.Findings, "host-access check host-pids: exposed") {
			t.Errorf("%s/%s: in-sandbox checks missing from findings: %q", res.Gate, res.Path, res.Findings)
		}
	}
}

func plantedValues(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "traces", "planted.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range plantedRE.FindAllString(string(b), -1) {
		out = append(out, m)
	}
	return out
}

// plantedLeft lists files under the plant root that still hold one of
// this run's planted values (other runs may be planting at the same time).
func plantedLeft(planted []string) []string {
	var out []string
	_ = filepath.WalkDir("/run/gatehouse", func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && anyIn(string(b), planted) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func anyIn(s string, vs []string) bool {
	for _, v := range vs {
		if strings.Contains(s, v) {
			return true
		}
	}
	return false
}

func hasPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

func hitOn(hits []evidence.Hit, endpoint string) bool {
	for _, h := range hits {
		if h.Endpoint == endpoint {
			return true
		}
	}
	return false
}
