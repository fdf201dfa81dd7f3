package steps

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// Planting fills every place and secret a profile may name, with a value
// per place that is unique and canary-shaped, only under the plant root;
// unplant removes all of it.
func TestPlantAndUnplant(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: canaries are planted under /run/gatehouse")
	}
	r := &runner{cfg: Config{LabNetns: "/run/netns/gh-planttest"}}
	ps := &plants{all: map[string]*plant{}}
	ctx := context.WithValue(context.Background(), plantKey{}, ps)
	var specs []targets.Spec
	for _, name := range []string{"s1", "s2"} {
		s := &scenario{session: name, gate: "long-lived-secret", path: targets.PathNormal}
		spec := targets.Spec{}
		if err := r.plantSecrets(ctx, s, &spec); err != nil {
			t.Fatal(err)
		}
		specs = append(specs, spec)
	}
	p1, p2 := ps.of("s1"), ps.of("s2")
	seen := map[string]string{}
	for _, p := range []*plant{p1, p2} {
		if !strings.HasPrefix(p.root, plantRoot+"/") {
			t.Errorf("planted outside %s: %s", plantRoot, p.root)
		}
		for _, pl := range p.planted {
			if !strings.HasPrefix(pl.Value, "GHCANARY-") {
				t.Errorf("%s: %q is not canary-shaped", pl.Place, pl.Value)
			}
			if prev, dup := seen[pl.Value]; dup {
				t.Errorf("value planted twice: %s and %s", prev, pl.Place)
			}
			seen[pl.Value] = pl.Place
		}
	}
	for _, place := range []string{"home", "secrets", "serviceaccount", "agent", "engine", "host"} {
		if _, ok := specs[0].Places[place]; !ok {
			t.Errorf("no place %q for the profile", place)
		}
	}
	for _, name := range []string{"aws-secret", "github-token"} {
		if specs[0].Secrets[name] == "" || specs[0].Secrets[name] == specs[1].Secrets[name] {
			t.Errorf("secret %q missing or shared between sessions", name)
		}
	}
	b, err := os.ReadFile(filepath.Join(specs[0].Places["home"], "agent", ".aws", "credentials"))
	if err != nil || !strings.Contains(string(b), "aws_secret_access_key = GHCANARY-home-aws-") {
		t.Errorf("home credentials not planted: %q %v", b, err)
	}
	for _, p := range []*plant{p1, p2} {
		if err := p.unplant(context.Background()); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(p.root); !os.IsNotExist(err) {
			t.Errorf("%s still exists after unplant", p.root)
		}
	}
	if _, err := os.Stat(filepath.Dir(p1.root)); !os.IsNotExist(err) {
		t.Errorf("the run's plant folder %s outlived its last session", filepath.Dir(p1.root))
	}
}
