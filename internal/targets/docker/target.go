// Package docker is the target for containers on a Docker daemon, driven
// through its API (the moby client): runc, gVisor's runsc, or any runtime
// the daemon knows. In the lab the daemon is one Gatehouse started inside the lab
// network namespace (StartDaemon); in the field it is the team's own.
package docker

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/moby/moby/client"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// Target starts one container per session on the daemon at Host.
type Target struct {
	host string
	spec Spec
	opts Options

	mu     sync.Mutex
	cli    *client.Client // shared by the target's sessions, made on first use
	base   string         // probe base image ref, imported on first use
	daemon *Daemon        // the lab daemon (shimmed runtimes); nil for a field daemon
	owned  bool           // Open made the daemon: started on first Start, stopped by Close
	// pinned, in tests, runs once the places are checked and before the
	// daemon binds them: where a hostile session swaps one.
	pinned func()
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

// New returns a target for the daemon at host (a DOCKER_HOST value) with the
// profile's docker section.
func New(host string, spec Spec) (*Target, error) {
	if host == "" {
		return nil, fmt.Errorf("docker: new target: no docker host")
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
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
// use the same DOCKER_HOST, one after the other, never at once.
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

// Close closes the target's client and stops the daemon Open started
// (removing every container, mount, cgroup and its namespace).
func (t *Target) Close(ctx context.Context) error {
	t.mu.Lock()
	d, cli := t.daemon, t.cli
	t.cli = nil
	if t.owned {
		t.daemon, t.base = nil, ""
	}
	t.mu.Unlock()
	if cli != nil {
		_ = cli.Close()
	}
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

// client is the target's one API client, shared by its sessions (it is
// safe for concurrent use): a client per session paid a version ping and
// a new connection each time.
func (t *Target) client() (*client.Client, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cli != nil {
		return t.cli, nil
	}
	cli, err := client.New(client.WithHost(t.host), client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, err
	}
	t.cli = cli
	return cli, nil
}
