package main

import (
	"slices"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// A team's own gate (examples/team/features, written with the step
// vocabulary of docs/ci.md) against its own profile through `gatehouse run
// --features`: its gate on both paths PASSes on the team's hardened
// profile, and the same feature FAILs on the leaky one with the hits that
// prove it, so the team's gate can fail.
func TestTeamFeatureWithItsOwnProfile(t *testing.T) {
	needSandbox(t)
	const features = "../../examples/team/features"
	tests := []struct {
		name, profile string
		code          int
		want          evidence.Verdict
	}{
		{"team profile", "../../examples/team/sandbox.yaml", exitOK, evidence.Pass},
		{"leaky profile", profilePath("bwrap-leaky.yaml"), exitViolation, evidence.Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runProfileAt(t, tt.profile, "", "--features", features)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, tt.code, r.stdout, r.stderr)
			}
			if !slices.Equal(r.run.Gates, []string{"no-phone-home"}) {
				t.Errorf("run.json gates %v, want the team's [no-phone-home]", r.run.Gates)
			}
			var paths []string
			for _, res := range r.results {
				paths = append(paths, res.Path)
				if res.Gate != "no-phone-home" || res.Verdict != tt.want {
					wrongVerdict(t, res, tt.want)
				}
				if tt.want == evidence.Fail && len(res.Hits) == 0 {
					t.Errorf("%s/%s FAILed with no proving hit", res.Gate, res.Path)
				}
			}
			slices.Sort(paths)
			if !slices.Equal(paths, []string{"assume-breach", "normal"}) {
				t.Errorf("paths %v, want both", paths)
			}
		})
	}
}
