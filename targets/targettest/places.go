package targettest

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// RecordPlaces records, as a harness does when it makes them, the
// identity of the folder at each of spec's places that has none yet:
// targets bind a place only if it is still that folder.
func RecordPlaces(t testing.TB, spec *targets.Spec) {
	t.Helper()
	if spec.PlaceIDs == nil {
		spec.PlaceIDs = map[string]targets.FileID{}
	}
	for name, p := range spec.Places {
		if _, ok := spec.PlaceIDs[name]; ok {
			continue
		}
		id, err := targets.IdentifyPlace(p)
		if err != nil {
			t.Fatalf("place %s: %v", name, err)
		}
		spec.PlaceIDs[name] = id
	}
}
