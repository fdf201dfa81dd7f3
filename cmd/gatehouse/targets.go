package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/gatehouse-dev/gatehouse/internal/runner"
	"github.com/gatehouse-dev/gatehouse/internal/targets/docker"
	"github.com/gatehouse-dev/gatehouse/internal/targets/docker/dockerkind"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// newTarget makes a target by runner's registry of adapters. A target that
// starts something for the run (the docker targets' lab daemon, on their
// first session) is remembered so closeTargets can stop it: run and compare
// call closeTargets when the run is over, whatever its outcome.
//
// probe is the static gatehouse-probe binary: the bwrap target also runs it
// as the init of each session's sandbox.
func newTarget(name string, prof *profile.Profile, probe string) (targets.Target, error) {
	var shim []string
	if name == dockerkind.Docker || name == dockerkind.GVisor {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("docker target: %w", err)
		}
		shim = docker.ShimCommand(exe)
	}
	t, err := runner.NewTarget(name, prof, probe, shim)
	if err != nil { // *runner.ConfigError: a usage error (exitTable)
		return nil, err
	}
	if c, ok := t.(closer); ok {
		remember(c)
	}
	return timed(t), nil
}

type closer interface {
	Close(ctx context.Context) error
}

var openTargets struct {
	mu      sync.Mutex
	closers []closer
}

func remember(c closer) {
	openTargets.mu.Lock()
	openTargets.closers = append(openTargets.closers, c)
	openTargets.mu.Unlock()
}

// closeTargets stops whatever targets made by newTarget started (lab
// daemons with their containers, mounts, cgroups and namespaces). Call it
// with a context that outlives Ctrl-C (context.WithoutCancel).
func closeTargets(ctx context.Context) error {
	openTargets.mu.Lock()
	cs := openTargets.closers
	openTargets.closers = nil
	openTargets.mu.Unlock()
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close(ctx))
	}
	return errors.Join(errs...)
}

// runShim is the hidden verb the lab daemon runs as its OCI runtime: it
// rewrites the container's network namespace and execs the real runtime.
func runShim(_ context.Context, args []string, _, stderr io.Writer) error {
	if code := docker.ShimMain(args, stderr); code != 0 {
		return &runtimeExit{code}
	}
	return nil
}

// labDocker runs a Docker daemon inside the lab namespace for `lab up
// --docker` (exploring by hand: `docker -H HOST run --runtime
// gatehouse-runc ...` needs a session entry, plain runc does not), and
// returns its stop.
func labDocker(ctx context.Context, labName string, stdout io.Writer) (func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if _, err := docker.ReapStale(ctx); err != nil {
		return nil, err
	}
	d, err := docker.StartDaemonWith(ctx, docker.DaemonOptions{Netns: "/run/netns/" + labName, StateDir: fmt.Sprintf("/run/ghd-%x", os.Getpid()), Shim: docker.ShimCommand(exe)})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "{\"docker_host\": %q, \"runtimes\": %q}\n", d.Host(), d.Runtimes())
	return func() { _ = d.Stop(context.WithoutCancel(ctx)) }, nil
}

// fieldRefusal is run's answer to --docker-host. Verdicts are earned from
// controlled endpoints that Gatehouse runs in its own lab namespaces, and
// the probe's attempts aim at the lab's addresses; a container on a
// team's daemon reaches neither (and would aim at real ones, such as the
// cloud's metadata service). Until field endpoints exist, a field run
// would produce verdicts that mean nothing, so it is refused (exit 2).
func fieldRefusal(host, target string) error {
	if target != dockerkind.Docker && target != dockerkind.GVisor {
		return usagef("run: --docker-host applies to the docker and gvisor targets only, not %q", target)
	}
	return usagef("run: --docker-host %s: field mode is not built yet, refusing rather than giving verdicts that mean nothing.\n"+
		"Gatehouse's verdicts come from controlled endpoints in its own lab, which a container on that daemon cannot reach; a field run needs\n"+
		"the team's own: a callback server (external-callback), an authoritative DNS zone whose queries it can read (dns-exfiltration),\n"+
		"a metadata endpoint (cloud-metadata), an inference endpoint the sandbox is allowed to reach (the positive control), and\n"+
		"Gatehouse's planted places, secrets and broker on the daemon's host. Nothing was started and the daemon was not contacted.\n"+
		"See docs/docker.md, \"In the field\"; run in the lab without --docker-host", host)
}
