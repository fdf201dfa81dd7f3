package targettest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// StartFunc starts a session on spec for the (sub)test t; the target's
// test adds what its profile needs to the spec first.
type StartFunc func(t *testing.T, ctx context.Context, spec targets.Spec) (targets.Session, error)

// ReplacedPlaces is the hostile check of a place swapped before Start. A
// session whose profile binds storage-root writable can swap the next
// session's storage (ROOT/storage/sN) for a link to a host folder or a
// folder of its own before that session starts; a target binds a place
// only from a descriptor of the very folder the harness made. Each way is
// a subtest: intact, the place is seen at inside (a folder in the
// sandbox); swapped, Start refuses it, never binds it. base is the spec
// without places; the session started is stopped at cleanup.
func ReplacedPlaces(t *testing.T, base targets.Spec, inside string, start StartFunc) {
	t.Helper()
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
			spec := base
			spec.Places = map[string]string{"storage-root": filepath.Join(root, "storage"), "storage": own}
			spec.PlaceIDs = nil
			RecordPlaces(t, &spec)
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
			s, err := start(t, ctx, spec)
			if err == nil {
				t.Cleanup(func() { _ = s.Stop(context.Background()) })
			}
			nonce := inside + "/nonce"
			if tc.mk == nil {
				if err != nil {
					t.Fatal(err)
				}
				if out := must(t, s, `cat "$1"`, nonce); out != "ours\n" {
					t.Fatalf("intact place: %s is %q", nonce, out)
				}
				return
			}
			if err == nil {
				t.Fatalf("started with a replaced place bound (%s: %q)", nonce, must(t, s, `cat "$1"`, nonce))
			}
			t.Logf("refused: %v", err)
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("refused as %v, want %v", err, tc.is)
			}
		})
	}
}
