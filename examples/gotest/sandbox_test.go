package gotest_test

import (
	"os"
	"testing"

	"github.com/gatehouse-dev/gatehouse/gatehousetest"
)

// What a team writes: its sandbox profile, the gates it must pass. Each
// gate and path becomes a subtest (TestSandbox/external-callback/normal, ...).
//
// GATEHOUSE_EXAMPLE_PROFILE, GATEHOUSE_EXAMPLE_INCONCLUSIVE_SKIPS and
// GATEHOUSE_EXAMPLE_KEY are not part of the pattern: leaky_test.go sets them
// to run this same test against profiles that must not pass.
func TestSandbox(t *testing.T) {
	profile := "../../targets/profiles/bwrap-hardened.yaml"
	if p := os.Getenv("GATEHOUSE_EXAMPLE_PROFILE"); p != "" {
		profile = p
	}
	gatehousetest.Run(t, gatehousetest.Options{
		Profile:           profile,
		Gates:             []string{"external-callback", "dns-exfiltration", "cloud-metadata"},
		InconclusiveSkips: os.Getenv("GATEHOUSE_EXAMPLE_INCONCLUSIVE_SKIPS") == "1",
		// Key: "cosign.key" would seal the run folder (COSIGN_PASSWORD);
		// a profile that puts the host within the guest's reach refuses it.
		Key: os.Getenv("GATEHOUSE_EXAMPLE_KEY"),
		// Out: "gatehouse-runs" would keep it whatever the outcome.
	})
}

// A team's own gate, from its own .feature files written with Gatehouse's
// step vocabulary, against its own profile.
func TestTeamFeatures(t *testing.T) {
	gatehousetest.Run(t, gatehousetest.Options{
		Profile:  "../team/sandbox.yaml",
		Features: "../team/features",
	})
}
