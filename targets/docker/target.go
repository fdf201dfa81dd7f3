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
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// Target starts one container per session on the daemon at Host.
type Target struct {
	host string
	spec Spec
	opts Options

	mu     sync.Mutex
	base   string  // probe base image ref, imported on first use
	daemon *Daemon // the lab daemon (shimmed runtimes); nil for a field daemon
	owned  bool    // Open made the daemon: started on first Start, stopped by Close
}

// Options are what a lab target takes from the profile besides Spec.
type Options struct {
	Spec Spec
	// Egress is the profile's nftables ruleset, applied in each session
	// namespace before the container starts (network lab only).
	EgressName  string
	EgressRules []byte
	// Resolver is written as /etc/resolv.conf's nameserver; "" takes the
	// harness's Spec.Network.Resolver.
	Resolver string
	// Env is the profile's environment, under Spec.Env and each command's.
	Env map[string]string
	// Shim is the argv prefix that runs ShimMain for a daemon Open starts
	// (e.g. [/usr/local/bin/gatehouse oci-runtime]).
	Shim []string
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
	// testcontainers-go's default logger prints a banner per provider to
	// stderr, in the middle of a run's report; sessions log nothing anyway.
	tclog.SetDefault(tclog.NewNoopLogger())
	return &Target{host: host, spec: spec, opts: Options{Spec: spec}}, nil
}

// NewLab returns a target on a lab daemon someone else started (and stops):
// sessions join the harness's namespaces through the daemon's shimmed
// runtimes.
func NewLab(d *Daemon, opts Options) (*Target, error) {
	t, err := New(d.Host(), opts.Spec)
	if err != nil {
		return nil, err
	}
	t.opts, t.daemon = opts, d
	return t, nil
}

// Open returns a target that starts its own lab daemon (in a sealed
// namespace of its own, with the shim) on the first Start, imports the
// probe base image into it once, and stops it in Close. The daemon's
// state folder is fixed per process, so successive Open targets (compare)
// use the same DOCKER_HOST, one after the other.
func Open(opts Options) (*Target, error) {
	if len(opts.Shim) == 0 {
		return nil, fmt.Errorf("docker: open: no runtime shim: sessions could not join the lab")
	}
	t, err := New(ownHost(), opts.Spec)
	if err != nil {
		return nil, err
	}
	t.opts, t.owned = opts, true
	return t, nil
}

func ownStateDir() string { return fmt.Sprintf("/run/ghd-%x", os.Getpid()) }

func ownHost() string { return "unix://" + ownStateDir() + "/docker.sock" }

// ensureDaemon starts the owned daemon on first use.
func (t *Target) ensureDaemon(ctx context.Context) error {
	if !t.owned {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.daemon != nil {
		return nil
	}
	// Leftovers of crashed runs first: they hold cgroups and namespaces.
	if _, err := ReapStale(ctx); err != nil {
		return err
	}
	d, err := StartDaemonWith(ctx, DaemonOptions{OwnNetns: true, StateDir: ownStateDir(), Shim: t.opts.Shim})
	if err != nil {
		return err
	}
	t.daemon = d
	return nil
}

// Daemon is the lab daemon sessions run on, nil before the first Start of
// an Open target or for a field daemon.
func (t *Target) Daemon() *Daemon {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.daemon
}

// Close stops the daemon Open started (removing every container, mount,
// cgroup and its namespace). Targets from New or NewLab have nothing to close.
func (t *Target) Close(ctx context.Context) error {
	t.mu.Lock()
	d := t.daemon
	if t.owned {
		t.daemon, t.base = nil, ""
	}
	t.mu.Unlock()
	if !t.owned || d == nil {
		return nil
	}
	return d.Stop(ctx)
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
	if err := t.ensureDaemon(ctx); err != nil {
		return "", err
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
