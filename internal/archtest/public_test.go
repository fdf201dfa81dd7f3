package archtest_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/archtest"
)

// publicPackages is everything outside internal/: what teams may import
// (gatehousetest, the target contract and its conformance suite and fake,
// detect, the evidence they read, the embedded features, corpus and
// shipped profiles) and what they run (cmd/..., the example, soak). Each
// is listed by name, so a new public package is a decision, not an
// accident: its exported API becomes a promise to every importer.
var publicPackages = []string{
	"cmd/gatehouse", "cmd/gatehouse-oci-runtime", "cmd/gatehouse-probe",
	"corpus", "detect", "features", "gatehousetest",
	"evidence", "evidence/bundle", "evidence/comparison", "evidence/diff", "evidence/gate",
	"evidence/index", "evidence/keyless", "evidence/keyless/keylesstest", "evidence/keys",
	"evidence/ocistore", "evidence/report",
	"examples/gotest", "scripts/soak",
	"targets", "targets/fake", "targets/profiles", "targets/targettest",
}

// TestPublicSurface fails on a package outside internal/ that the list
// does not name, and on a name that is no longer a public package.
func TestPublicSurface(t *testing.T) {
	probs, err := archtest.Public(filepath.Join("..", ".."), publicPackages)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Error(p)
	}
}

// TestPublicAPIHidesInternalTypes fails when an exported declaration of a
// public package mentions a type that another module cannot name.
func TestPublicAPIHidesInternalTypes(t *testing.T) {
	probs, err := archtest.Exposed(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Error(p)
	}
}

// The surface check on a fixture module (testdata/exposed): a command and
// a package the list lacks, an entry that is gone, and one that is
// internal, while face/internal/deep is internal and needs no entry.
func TestSurfaceFindsPlanted(t *testing.T) {
	probs, err := archtest.Public(filepath.Join("testdata", "exposed"), []string{"face", "gone", "internal/hidden"})
	if err != nil {
		t.Fatal(err)
	}
	expectExactly(t, probs, []string{
		"package cmd/tool is public (outside internal/) but not in the public list",
		"package open is public (outside internal/) but not in the public list",
		"stale public entry: gone is not",
		"stale public entry: internal/hidden is not",
	})
}

// The exposure check on the fixture's package face, which plants each
// kind of exported declaration that can carry an internal type. It must
// find exactly those, and not: an unexported function, a method of an
// unexported type, an unexported field, a type re-exported by an alias, a
// test file, a command (package main), or a public package that uses
// internal types only inside its functions (open).
func TestExposedFindsPlanted(t *testing.T) {
	probs, err := archtest.Exposed(filepath.Join("testdata", "exposed"))
	if err != nil {
		t.Fatal(err)
	}
	expectExactly(t, probs, []string{
		"face/face.go:12: Open mentions internal/hidden.Config",
		"face/face.go:17: Options.Exported mentions internal/hidden.Secret",
		"face/face.go:18: Options.Config mentions internal/hidden.Config",
		"face/face.go:23: Options.Spec mentions internal/hidden.Secret",
		"face/face.go:35: Runner.Run mentions face/internal/deep.Token",
		"face/face.go:36: Runner.Handle mentions internal/hidden.Handle",
		"face/face.go:42: Default mentions internal/hidden.Config",
		"face/face.go:43: Made mentions internal/hidden.Secret",
		"face/face.go:47: List mentions internal/hidden.Secret",
		"face/face.go:50: Sum mentions internal/hidden.Number",
	})
}

// expectExactly fails unless each of want is in one problem and there
// are as many problems as wants.
func expectExactly(t *testing.T, probs, want []string) {
	t.Helper()
	if len(probs) != len(want) {
		t.Errorf("%d problems, want %d:\n%s", len(probs), len(want), strings.Join(probs, "\n"))
	}
	for _, w := range want {
		found := false
		for _, p := range probs {
			found = found || strings.Contains(p, w)
		}
		if !found {
			t.Errorf("no problem says %q; got:\n%s", w, strings.Join(probs, "\n"))
		}
	}
}
