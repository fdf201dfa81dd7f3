package exec_test

import (
	"context"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/targets/exec"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/targettest"
)

// The wrapper's workspace is bound from a descriptor opened with no link
// followed and checked to be the folder made: a place swapped before
// Start is refused, never bound.
func TestReplacedWorkspaceIsNeverBound(t *testing.T) {
	needRoot(t)
	p := loadTestdata(t, "exec-sh.yaml")
	*exec.WorkspaceOf(p) = "{{place:storage}}"
	base := targets.Spec{Name: "replaced", Path: targets.PathBreach, Network: newNetns(t)}
	targettest.ReplacedPlaces(t, base, "/workspace", func(t *testing.T, ctx context.Context, spec targets.Spec) (targets.Session, error) {
		return newTarget(t, p).Start(ctx, spec)
	})
}
