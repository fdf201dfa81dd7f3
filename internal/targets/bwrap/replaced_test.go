package bwrap_test

import (
	"context"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/targets/bwrap"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/targettest"
)

// bubblewrap binds each place from a descriptor the harness opened: a
// place swapped before Start is refused, never bound, and nothing of the
// session is left running.
func TestReplacedPlacesAreNeverBound(t *testing.T) {
	needSandbox(t)
	p := shipped(t, "bwrap-hardened.yaml")
	base := targets.Spec{Name: "replaced", Path: targets.PathNormal, Network: newNetns(t)}
	targettest.ReplacedPlaces(t, base, "/workspace", func(t *testing.T, ctx context.Context, spec targets.Spec) (targets.Session, error) {
		return bwrap.New(bwrap.Options{Profile: p, Root: t.TempDir(), Init: probetest.Build(t)}).Start(ctx, withPlaces(t, p, spec))
	})
}
