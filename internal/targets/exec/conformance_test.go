package exec_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/targettest"
)

func TestConformance(t *testing.T) {
	needRoot(t)
	for _, path := range []targets.Path{targets.PathNormal, targets.PathBreach} {
		t.Run("exec-sh/"+string(path), func(t *testing.T) {
			p := loadTestdata(t, "exec-sh.yaml")
			targettest.Run(t, func(t *testing.T) (targets.Target, targets.Spec) {
				return newTarget(t, p), withPlaces(t, targets.Spec{Name: "conf", Path: path, Network: newNetns(t)})
			})
		})
	}
}
