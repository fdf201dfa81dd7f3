// Package docker is the target for containers on a Docker daemon, driven
// through testcontainers-go: runc, gVisor's runsc, or any runtime the daemon
// knows. In the lab the daemon is one Gatehouse started inside the lab
// network namespace (StartDaemon); in the field it is the team's own.
package docker

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/moby/moby/client"

	"gatehouse/targets"
)

// Target starts one container per session on the daemon at Host.
type Target struct {
	host string
	spec Spec

	mu   sync.Mutex
	base string // probe base image ref, imported on first use
}

var _ targets.Target = (*Target)(nil)

// boundHost is the one Docker host testcontainers-go talks to in this
// process: it resolves DOCKER_HOST once and caches it, so two targets on
// two daemons in one process would silently share the first.
var (
	hostMu    sync.Mutex
	boundHost string
)

// New returns a target for the daemon at host (a DOCKER_HOST value) with the
// profile's docker section. It points testcontainers-go at host, with the
// reaper off (its image cannot be pulled; sessions clean up themselves),
// and refuses a second, different host in the same process.
func New(host string, spec Spec) (*Target, error) {
	if host == "" {
		return nil, fmt.Errorf("docker: new target: no docker host")
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	hostMu.Lock()
	defer hostMu.Unlock()
	if boundHost != "" && boundHost != host {
		return nil, fmt.Errorf("docker: new target: this process already uses docker host %s (testcontainers-go resolves one per process), not %s", boundHost, host)
	}
	if cur := os.Getenv("DOCKER_HOST"); boundHost == "" && cur != "" && cur != host {
		return nil, fmt.Errorf("docker: new target: DOCKER_HOST is %s, not %s", cur, host)
	}
	if err := os.Setenv("DOCKER_HOST", host); err != nil {
		return nil, fmt.Errorf("docker: new target: %w", err)
	}
	if err := os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true"); err != nil {
		return nil, fmt.Errorf("docker: new target: %w", err)
	}
	boundHost = host
	return &Target{host: host, spec: spec}, nil
}

// Name is "gvisor" when the profile's runtime is runsc (the gvisor target
// is this one with that runtime), else "docker".
func (t *Target) Name() string {
	if t.spec.Runtime == "runsc" {
		return "gvisor"
	}
	return "docker"
}

// Host is the DOCKER_HOST this target uses.
func (t *Target) Host() string { return t.host }

// image is the profile's image, or the probe base image made on demand.
func (t *Target) image(ctx context.Context) (string, error) {
	if t.spec.Image != "" {
		return t.spec.Image, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.base != "" {
		return t.base, nil
	}
	ref, err := BaseImage(ctx, t.host, BusyboxPath)
	if err != nil {
		return "", err
	}
	t.base = ref
	return ref, nil
}

func (t *Target) client() (*client.Client, error) {
	return client.New(client.WithHost(t.host), client.WithAPIVersionNegotiation())
}
