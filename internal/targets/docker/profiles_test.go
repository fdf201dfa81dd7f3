package docker_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/targets/docker/dockerkind"
	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
)

// TestShippedProfilesValidate: the docker section of each shipped docker
// or gvisor profile, as the profile loader completes it, passes Validate.
func TestShippedProfilesValidate(t *testing.T) {
	for _, file := range []string{"docker-hardened.yaml", "gvisor-hardened.yaml", "docker-leaky.yaml"} {
		t.Run(file, func(t *testing.T) {
			p, err := kinds.LoadFS(profiles.FS, file)
			if err != nil {
				t.Fatal(err)
			}
			if err := dockerkind.SpecOf(p).Validate(); err != nil {
				t.Fatal(err)
			}
			if dockerkind.SpecOf(p).Network == "" || dockerkind.SpecOf(p).User == "" {
				t.Errorf("network %q user %q not completed by the loader", dockerkind.SpecOf(p).Network, dockerkind.SpecOf(p).User)
			}
		})
	}
}
