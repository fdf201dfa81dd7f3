package bwrap_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/targets/bwrap"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/targettest"
)

var placeRef = regexp.MustCompile(`\{\{place:([^}]+)\}\}(/[^\s"]*)?`)

// withPlaces gives every {{place:NAME}} the profile's arguments name a
// fresh folder (with any sub-folder a reference such as
// {{place:shared}}/tmp needs), and every {{secret:NAME}} its environment
// names a fake value, as the harness does for a real session.
func withPlaces(t testing.TB, p *profile.Profile, spec targets.Spec) targets.Spec {
	t.Helper()
	if spec.Places == nil {
		spec.Places = map[string]string{}
	}
	root := t.TempDir()
	for _, a := range bwrap.SectionOf(p).Args {
		for _, m := range placeRef.FindAllStringSubmatch(a, -1) {
			dir, ok := spec.Places[m[1]]
			if !ok {
				dir = filepath.Join(root, m[1])
				spec.Places[m[1]] = dir
			}
			if err := os.MkdirAll(filepath.Join(dir, m[2]), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	targettest.RecordPlaces(t, &spec)
	if spec.Secrets == nil {
		spec.Secrets = map[string]string{}
	}
	for _, v := range p.Env {
		for _, m := range secretRef.FindAllStringSubmatch(v, -1) {
			if _, ok := spec.Secrets[m[1]]; !ok {
				spec.Secrets[m[1]] = "ghctest0000000000000000"
			}
		}
	}
	return spec
}

var secretRef = regexp.MustCompile(`\{\{secret:([^}]+)\}\}`)
