package exec_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/targettest"
)

// A session whose profile binds storage-root writable can swap the next
// session's storage (ROOT/storage/sN) for a link to a host folder or a
// folder of its own before that session starts. The wrapper's workspace
// is bound from a descriptor opened with no link followed and checked to
// be the folder made: the swapped path is refused, never bound.
func TestReplacedWorkspaceIsNeverBound(t *testing.T) {
	needRoot(t)
	p := loadTestdata(t, "exec-sh.yaml")
	p.Workspace = "{{place:storage}}"
	for _, tc := range []struct {
		name string
		mk   func(p, outside string) error // nil: left intact
		is   error
	}{
		{name: "intact place is bound"},
		{name: "link to a host folder", mk: func(p, outside string) error { return os.Symlink(outside, p) }},
		{name: "another folder", mk: func(p, _ string) error { return os.Mkdir(p, 0o755) }, is: targets.ErrPlaceSwapped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, outside := t.TempDir(), t.TempDir()
			own := filepath.Join(root, "storage", "s2")
			if err := os.MkdirAll(own, 0o755); err != nil {
				t.Fatal(err)
			}
			for dir, data := range map[string]string{own: "ours\n", outside: "the host's\n"} {
				if err := os.WriteFile(filepath.Join(dir, "nonce"), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			spec := targets.Spec{Name: "replaced", Path: targets.PathBreach, Network: newNetns(t),
				Places: map[string]string{"storage-root": filepath.Join(root, "storage"), "storage": own}}
			targettest.RecordPlaces(t, &spec)
			if tc.mk != nil {
				if err := os.Rename(own, own+".moved"); err != nil {
					t.Fatal(err)
				}
				if err := tc.mk(own, outside); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s, err := newTarget(t, p).Start(ctx, spec)
			if err == nil {
				t.Cleanup(func() { _ = s.Stop(context.Background()) })
			}
			if tc.mk == nil {
				if err != nil {
					t.Fatal(err)
				}
				if out := run(t, s, "cat /workspace/nonce", nil); out != "ours\n" {
					t.Fatalf("intact place: /workspace/nonce is %q", out)
				}
				return
			}
			if err == nil {
				t.Fatalf("started with a replaced workspace bound (/workspace/nonce: %q)", run(t, s, "cat /workspace/nonce", nil))
			}
			t.Logf("refused: %v", err)
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("refused as %v, want %v", err, tc.is)
			}
		})
	}
}
