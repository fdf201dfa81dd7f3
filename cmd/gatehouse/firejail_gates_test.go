package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// needFirejail skips, with the reason, unless firejail and root are here.
func needFirejail(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the firejail target joins network namespaces of our own and mounts")
	}
	for _, tool := range []string{"firejail", "nft", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (scripts/setup.sh installs it): %v", tool, err)
		}
	}
}

// The shipped firejail-hardened profile PASSes the network gates on both
// paths with the positive control reached; the same firejail options with
// no egress ruleset FAIL external-callback with the hit that proves it.
func TestFirejailNetworkGates(t *testing.T) {
	needFirejail(t)
	for _, tc := range []struct {
		name, path string
		want       evidence.Verdict
		code       int
	}{
		{"hardened", profilePath("firejail-hardened.yaml"), evidence.Pass, 0},
		{"leaky", filepath.Join("testdata", "profiles", "firejail-leaky.yaml"), evidence.Fail, exitViolation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runProfileAt(t, tc.path, "external-callback")
			if r.code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			if len(r.results) != 2 {
				t.Fatalf("want 2 results (both paths), got %d; stdout:\n%s\nstderr:\n%s", len(r.results), r.stdout, r.stderr)
			}
			for _, res := range r.results {
				if res.Verdict != tc.want {
					wrongVerdict(t, res, tc.want)
				}
				if tc.want == evidence.Fail && len(res.Hits) == 0 {
					t.Errorf("%s/%s: FAIL without a proving hit", res.Gate, res.Path)
				}
			}
			if r.run.Target != "firejail" {
				t.Errorf("run.json target %q, want firejail", r.run.Target)
			}
			assertNothingLeft(t, r.stdout)
		})
	}
}
