package steps

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/fake"
)

// A session whose profile binds storage-root writable can reach the name
// the next session's storage will have (ROOT/storage/sN): before it is
// made, or once it is made and before its nonce is in, it puts a link to a
// host folder or a folder of its own there. The harness refuses to start
// that session, writes nothing through the link or into the folder, and
// binds neither.
func TestPlacesRefusePlantedStorage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: places are made under /run/gatehouse")
	}
	link := func(outside string) func(string) error {
		return func(p string) error { return os.Symlink(outside, p) }
	}
	foreign := func(string) func(string) error {
		return func(p string) error {
			if err := os.Mkdir(p, 0o777); err != nil {
				return err
			}
			return os.Chown(p, 4242, 4242) // someone else's, as a sandbox's uid is
		}
	}
	for _, tc := range []struct {
		name  string
		plant func(outside string) func(string) error
		late  bool // planted once the harness made the folder, not before
	}{
		{"link to a host folder, planted before", link, false},
		{"folder of someone else's, planted before", foreign, false},
		{"link to a host folder, swapped in once made", link, true},
		{"folder of someone else's, swapped in once made", foreign, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outside := t.TempDir()
			tgt, started := refusing()
			r := &runner{cfg: Config{LabNetns: "/run/netns/gh-placetest", Target: tgt}}
			m := &multi{nets: map[string]targets.Network{}, nonces: map[string]string{}}
			ctx := context.WithValue(context.Background(), multiKey{}, m)
			t.Cleanup(func() { r.afterSessions(ctx, nil, nil) })
			var spec1 targets.Spec
			if err := r.addPlaces(ctx, &scenario{session: "s1"}, &spec1); err != nil {
				t.Fatal(err)
			}
			next := filepath.Join(spec1.Places["storage-root"], "s2")
			hostile := func() {
				if _, err := os.Lstat(next); err == nil {
					if err := os.Rename(next, next+".moved"); err != nil {
						t.Fatal(err)
					}
				}
				if err := tc.plant(outside)(next); err != nil {
					t.Fatal(err)
				}
			}
			if tc.late {
				m.made = func(string) { hostile() }
			} else {
				hostile()
			}
			var spec2 targets.Spec
			err := r.addPlaces(ctx, &scenario{session: "s2"}, &spec2)
			if err == nil {
				t.Errorf("places made for s2 over what s1 planted; storage = %s", spec2.Places["storage"])
			}
			if names, _ := os.ReadDir(outside); len(names) > 0 {
				t.Errorf("the harness wrote through the link, into %s: %v", outside, names)
			}
			if hasNonce(next) {
				t.Errorf("the harness wrote its nonce into %s, which it did not make", next)
			}
			if err == nil {
				if _, _ = r.start(ctx, spec2); *started {
					t.Error("the target was asked to bind a place that is not the harness's")
				}
			}
		})
	}
}

// A place replaced after it was made and before the target binds it fails
// the start before the target is asked: no session, a clear error.
func TestStartRefusesReplacedPlaces(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: places are made under /run/gatehouse")
	}
	for _, tc := range []struct {
		name  string
		place string
		mk    func(p, outside string) error
	}{
		{"storage swapped for a link", "storage", func(p, outside string) error { return os.Symlink(outside, p) }},
		{"storage swapped for another folder", "storage", func(p, _ string) error { return os.Mkdir(p, 0o755) }},
		{"cache slot swapped for another folder", "cache", func(p, _ string) error { return os.Mkdir(p, 0o755) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tgt, started := refusing()
			r := &runner{cfg: Config{LabNetns: "/run/netns/gh-placetest", Target: tgt}}
			m := &multi{nets: map[string]targets.Network{}, nonces: map[string]string{}}
			ctx := context.WithValue(context.Background(), multiKey{}, m)
			t.Cleanup(func() { r.afterSessions(ctx, nil, nil) })
			var spec targets.Spec
			if err := r.addPlaces(ctx, &scenario{session: "s1"}, &spec); err != nil {
				t.Fatal(err)
			}
			p := spec.Places[tc.place]
			if err := os.Rename(p, p+".moved"); err != nil {
				t.Fatal(err)
			}
			if err := tc.mk(p, t.TempDir()); err != nil {
				t.Fatal(err)
			}
			_, err := r.start(ctx, spec)
			if err == nil || *started {
				t.Fatalf("started on a replaced %s (err %v)", tc.place, err)
			}
			if tc.name != "storage swapped for a link" && !errors.Is(err, targets.ErrPlaceSwapped) {
				t.Errorf("refused as %v, want ErrPlaceSwapped", err)
			}
		})
	}
}

func hasNonce(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, "nonce"))
	return err == nil
}

// refusing is a target that notes it was asked to start a session and
// starts none.
func refusing() (*fake.Target, *bool) {
	started := new(bool)
	return &fake.Target{StartFunc: func(context.Context, targets.Spec) (targets.Session, error) {
		*started = true
		return nil, errors.New("fake: no session")
	}}, started
}
