package docker_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/targets/docker"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/targettest"
)

// TestTargetConformance runs the shared conformance suite against the
// docker target on the lab daemon's shimmed runtimes, runc and runsc.
func TestTargetConformance(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			needLab(t)
			if rt == "runsc" {
				needRunsc(t)
			}
			targettest.Run(t, func(t *testing.T) (targets.Target, targets.Spec) {
				tg, err := docker.NewLab(labDaemon, docker.Options{Spec: docker.Spec{Runtime: rt, Network: docker.NetworkNone}})
				if err != nil {
					t.Fatal(err)
				}
				return tg, targets.Spec{Name: "conf-" + randomSuffix(), Path: targets.PathNormal}
			})
		})
	}
}
