package probe_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// The mounts check lists the root's device:inode for the harness.
func TestHostCheckMountsListsDeviceAndInode(t *testing.T) {
	reps := runPlan(t, 3000, wire.Step{ID: "m", Kind: wire.KindHostCheck, Target: "mounts"})
	root, err := wire.StatID("/")
	if err != nil {
		t.Fatal(err)
	}
	r := reps["m"]
	if r.Outcome != wire.OutcomeCompleted && r.Outcome != wire.OutcomePartial {
		t.Fatalf("mounts: %s (%s)", r.Outcome, r.Error)
	}
	if !strings.HasPrefix(r.Excerpt, "ok: ") || !strings.Contains(r.Excerpt, "\nmnt "+root.String()+" /\n") {
		t.Errorf("mounts excerpt lacks the ok line or the root's line %q: %q", root, r.Excerpt)
	}
}
