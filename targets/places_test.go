package targets_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// OpenPlace binds only the folder the harness made: a place (or a path
// below one) that another session replaced with a link to a host folder,
// or with a folder of its own, is refused, and nothing outside is opened.
func TestOpenPlaceRefusesReplacedPlaces(t *testing.T) {
	for _, tc := range []struct {
		name   string
		host   func(spec targets.Spec) string // the path a target binds
		attack func(t *testing.T, root, outside string)
		is     error // nil: refused with any error
		ok     bool  // the path is intact: opened
		sub    bool  // the attack is below a place
	}{
		{name: "intact place opens", host: place("storage"), ok: true},
		{name: "intact path below a place opens", host: below("shared", "tmp"), ok: true},
		{name: "place swapped for a link to a host folder", host: place("storage"),
			attack: func(t *testing.T, root, outside string) {
				swap(t, filepath.Join(root, "storage", "s2"), func(p string) error { return os.Symlink(outside, p) })
			}},
		{name: "place swapped for another folder", host: place("storage"), is: targets.ErrPlaceSwapped,
			attack: func(t *testing.T, root, _ string) {
				swap(t, filepath.Join(root, "storage", "s2"), func(p string) error { return os.Mkdir(p, 0o755) })
			}},
		{name: "link above the place", host: place("storage"),
			attack: func(t *testing.T, root, outside string) {
				if err := os.MkdirAll(filepath.Join(outside, "s2"), 0o755); err != nil {
					t.Fatal(err)
				}
				swap(t, filepath.Join(root, "storage"), func(p string) error { return os.Symlink(outside, p) })
			}},
		{name: "path below a place swapped for a link", host: below("shared", "tmp"), sub: true,
			attack: func(t *testing.T, root, outside string) {
				swap(t, filepath.Join(root, "shared", "tmp"), func(p string) error { return os.Symlink(outside, p) })
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, root := madePlaces(t)
			outside := t.TempDir()
			if tc.attack != nil {
				tc.attack(t, root, outside)
			}
			f, ok, err := targets.OpenPlace(spec, tc.host(spec))
			if !ok {
				t.Fatalf("%s: not seen as a place", tc.host(spec))
			}
			if tc.ok {
				if err != nil {
					t.Fatalf("intact place refused: %v", err)
				}
				f.Close()
				return
			}
			if err == nil {
				f.Close()
				t.Fatalf("%s opened after the attack: a target would bind it", tc.host(spec))
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("refused as %v, want %v", err, tc.is)
			}
			// CheckPlaces looks at the places themselves, not below them.
			if err := targets.CheckPlaces(spec); err == nil && !tc.sub {
				t.Error("CheckPlaces passed a replaced place")
			}
		})
	}
}

func TestOpenPlaceFailsClosed(t *testing.T) {
	spec, _ := madePlaces(t)
	if f, ok, err := targets.OpenPlace(spec, "/etc"); ok || err != nil || f != nil {
		t.Errorf("a path under no place: ok %v, err %v", ok, err)
	}
	delete(spec.PlaceIDs, "storage")
	if _, ok, err := targets.OpenPlace(spec, spec.Places["storage"]); !ok || err == nil {
		t.Errorf("a place with no recorded identity opened: ok %v, err %v", ok, err)
	}
}

// madePlaces makes storage-root, a session's storage in it and shared/tmp
// as a harness does, with their identities recorded.
func madePlaces(t *testing.T) (targets.Spec, string) {
	root := t.TempDir()
	spec := targets.Spec{
		Places: map[string]string{
			"storage-root": filepath.Join(root, "storage"),
			"storage":      filepath.Join(root, "storage", "s2"),
			"shared":       filepath.Join(root, "shared"),
		},
		PlaceIDs: map[string]targets.FileID{},
	}
	for _, d := range []string{"storage/s2", "shared/tmp"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for n, p := range spec.Places {
		id, err := targets.IdentifyPlace(p)
		if err != nil {
			t.Fatal(err)
		}
		spec.PlaceIDs[n] = id
	}
	return spec, root
}

func place(name string) func(targets.Spec) string {
	return func(s targets.Spec) string { return s.Places[name] }
}

func below(name, rel string) func(targets.Spec) string {
	return func(s targets.Spec) string { return filepath.Join(s.Places[name], rel) }
}

// swap moves what is at p aside and makes p anew with mk.
func swap(t *testing.T, p string, mk func(string) error) {
	t.Helper()
	if err := os.Rename(p, p+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := mk(p); err != nil {
		t.Fatal(err)
	}
}
