package bwrap_test

import (
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/targets/bwrap"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
	"github.com/gatehouse-dev/gatehouse/targets/targettest"
)

func TestConformance(t *testing.T) {
	needSandbox(t)
	for _, tc := range []struct {
		profile string
		path    targets.Path
		netns   bool
	}{
		{profiles.Hardened, targets.PathNormal, true},
		{profiles.Hardened, targets.PathBreach, true},
		{profiles.Leaky, targets.PathNormal, true},
		{profiles.Offline, targets.PathNormal, false},
	} {
		t.Run(tc.profile+"/"+string(tc.path), func(t *testing.T) {
			p := shipped(t, tc.profile)
			targettest.Run(t, func(t *testing.T) (targets.Target, targets.Spec) {
				spec := targets.Spec{Name: "conf", Path: tc.path}
				if tc.netns {
					spec.Network = newNetns(t)
				}
				return bwrap.New(bwrap.Options{Profile: p, Root: t.TempDir(), Init: probetest.Build(t)}), withPlaces(t, p, spec)
			})
		})
	}
}
