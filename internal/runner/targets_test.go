package runner_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/runner"
	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// Every kind a profile may name has a target in the registry: a profile
// that loads never meets "unknown target" when the run starts. (Docker
// without a shim, a wrapper not installed, are this machine's errors.)
func TestEveryKindHasATarget(t *testing.T) {
	for _, k := range kinds.All {
		t.Run(k.Name(), func(t *testing.T) {
			_, err := runner.NewTarget(k.Name(), &profile.Profile{Name: "p", Target: k.Name()}, "/nonexistent/probe", nil)
			if err != nil && strings.Contains(err.Error(), "unknown target") {
				t.Fatalf("NewTarget(%q): %v", k.Name(), err)
			}
		})
	}
	if _, err := runner.NewTarget("qemu", &profile.Profile{Name: "p", Target: "qemu"}, "/nonexistent/probe", nil); err == nil || !strings.Contains(err.Error(), "unknown target") {
		t.Fatalf("NewTarget(qemu): %v, want unknown target", err)
	}
}
