package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/agents"
	"github.com/gatehouse-dev/gatehouse/internal/auditmon"
	"github.com/gatehouse-dev/gatehouse/internal/ledger"
	"github.com/gatehouse-dev/gatehouse/internal/targets/bwrap"
	"github.com/gatehouse-dev/gatehouse/internal/targets/docker"
	"github.com/gatehouse-dev/gatehouse/internal/targets/docker/dockerkind"
	"github.com/gatehouse-dev/gatehouse/internal/targets/exec"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/internal/targets/realwrap"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// ConfigError is this machine's or the request's configuration (an unknown
// target, a wrapper not installed): the CLI's exit 2, a test's skip.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// NewTarget is the explicit registry of target adapters. probe is the static
// gatehouse-probe binary (the bwrap and wrapper targets run it as each
// session's init); shim is the argv the docker targets' lab daemon runs as
// its OCI runtime (docker.ShimCommand of the gatehouse binary), nil when
// there is none. A target that starts something for the run (the docker
// targets' daemon) implements Close(ctx): the caller closes it.
func NewTarget(name string, prof *profile.Profile, probe string, shim []string) (targets.Target, error) {
	switch name {
	case "bwrap":
		return bwrap.New(bwrap.Options{Profile: prof, Init: probe}), nil
	case dockerkind.Docker, dockerkind.GVisor:
		if len(shim) == 0 {
			return nil, &ConfigError{fmt.Errorf("%s target: needs the gatehouse binary as its lab daemon's runtime shim; use 'gatehouse run'", name)}
		}
		opts := docker.Options{Spec: *dockerkind.SpecOf(prof), Resolver: prof.Resolver, Env: prof.Env, Shim: shim}
		if prof.Egress != "" {
			opts.EgressName = prof.Egress
			rules, err := prof.EgressRules()
			if err != nil {
				return nil, &ConfigError{err}
			}
			opts.EgressRules = rules
		}
		t, err := docker.Open(opts)
		if err != nil {
			return nil, &ConfigError{err}
		}
		return t, nil
	case exec.KindExec, exec.KindFirejail:
		// The wrapper runs the probe binary's "init 0" as its command.
		return exec.New(exec.Options{Profile: prof, Init: probe}), nil
	case realwrap.KindSRT, realwrap.KindCodex:
		// Not installed (or srt's TMPDIR not makeable) is this machine's
		// configuration: the error carries the install command.
		tools, err := agents.DefaultCache(os.Getenv).WrapperTools(name)
		if err != nil {
			return nil, &ConfigError{err}
		}
		t, err := realwrap.New(exec.Options{Profile: prof, Init: probe, Tools: tools})
		if err != nil {
			return nil, &ConfigError{err}
		}
		return t, nil
	default:
		return nil, &ConfigError{fmt.Errorf("unknown target %q; known targets: bwrap, docker, gvisor, exec, firejail, srt, codex-sandbox", name)}
	}
}

// Sweep removes what runs that died left behind, by ownership (package
// ledger), their lab Docker daemons (pid-owned state folders) and their
// audit rules, saying what it removed on out. Runs that are alive keep
// everything.
func Sweep(ctx context.Context, out io.Writer) error {
	if reaped, err := docker.ReapStale(ctx); err != nil {
		return err
	} else if len(reaped) > 0 {
		fmt.Fprintf(out, "removed lab Docker daemons left behind: %s\n", strings.Join(reaped, " "))
	}
	// Audit rules of an audit source that was killed are kernel state
	// too, owned by the dead process's pid in their key.
	if rules, err := auditmon.Sweep(ctx); err != nil && !errors.Is(err, auditmon.ErrUnsupported) {
		return fmt.Errorf("remove audit rules of dead runs: %w", err)
	} else if len(rules) > 0 {
		fmt.Fprintf(out, "removed %d audit rule(s) of dead runs\n", len(rules))
	}
	sw, err := ledger.Sweep(ctx)
	if len(sw.Removed) > 0 {
		fmt.Fprintf(out, "removed what %d run(s) that died left behind: %s\n", len(sw.Owners), describeSwept(sw.Removed))
	}
	if err != nil {
		return fmt.Errorf("remove what dead runs left: %w", err)
	}
	return nil
}

func describeSwept(es []ledger.Entry) string {
	n := map[string]int{}
	for _, e := range es {
		n[e.Kind]++
	}
	var parts []string
	for _, k := range []string{ledger.Cgroup, ledger.Netns, ledger.SysvShm, ledger.Mqueue, ledger.Path, ledger.ProbeWrite} {
		if n[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[k], k))
		}
	}
	if len(parts) == 0 {
		return "nothing left to remove"
	}
	return strings.Join(parts, ", ")
}
