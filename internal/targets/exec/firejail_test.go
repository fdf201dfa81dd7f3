package exec_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
	"github.com/gatehouse-dev/gatehouse/targets/targettest"
)

func TestFirejailConformance(t *testing.T) {
	needRoot(t)
	needFirejail(t)
	for _, path := range []targets.Path{targets.PathNormal, targets.PathBreach} {
		t.Run("firejail-hardened/"+string(path), func(t *testing.T) {
			p := shipped(t, profiles.FirejailHardened)
			targettest.Run(t, func(t *testing.T) (targets.Target, targets.Spec) {
				return newTarget(t, p), withPlaces(t, targets.Spec{Name: "conf", Path: path, Network: newNetns(t)})
			})
		})
	}
}
