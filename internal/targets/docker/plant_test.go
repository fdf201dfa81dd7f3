package docker_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/targets/docker"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/targettest"
)

// CopyIn goes through the engine's archive API, which resolves the path in
// the container's own root and replaces what is at the name: a FIFO or a
// link the session plants at the harness's next name neither blocks it nor
// reaches the host.
func TestCopyInSurvivesPlantedEntries(t *testing.T) {
	needLab(t)
	tg, err := docker.NewLab(labDaemon, docker.Options{Spec: docker.Spec{Runtime: "runc", Network: docker.NetworkNone}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := tg.Start(ctx, targets.Spec{Name: "plant-" + randomSuffix(), Path: targets.PathBreach})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	targettest.PlantedCopyIn(t, s)
}
