package docker

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/moby/moby/api/types/mount"

	"github.com/gatehouse-dev/gatehouse/internal/targets/egress"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// netPlan is what one session gets on the host, decided before create:
// how it is networked, and the files it binds (stageFiles).
type netPlan struct {
	mode       string // Docker network mode: none, host or (field daemon) bridge
	runtime    string // the daemon runtime to use; "" keeps the spec's
	shimmed    bool   // the runtime is our shim: an entry must be written
	netns      string // namespace the shim puts the container in; "" = Docker's own
	egress     bool   // apply the profile's ruleset in netns before start
	resolvFile string // host file bound at /etc/resolv.conf, removed at Stop
	note       string // for Inspect: how the network was made

	filesDir   string        // staged session files, removed at Stop
	fileMounts []mount.Mount // read-only binds of the staged files
	hasProbe   bool          // the probe is among them

	entryFile string          // the shim entry (and its .flags marker), removed at Stop
	applied   *egress.Applied // the ruleset in force, flushed at Stop
}

// planNetwork maps the profile's network and the harness's session network
// onto the daemon. On a lab daemon every container goes through the shim:
// "lab" joins the session namespace (Docker mode none, so Docker adds no
// interface of its own), "host" joins the namespace the harness names for
// it (the lab's), "none" keeps Docker's new empty namespace. Without a
// session network from the harness a session gets none, as the Target
// contract says.
func (t *Target) planNetwork(spec targets.Spec) (*netPlan, error) {
	want := t.spec.Network
	if want == "" {
		want = NetworkNone
	}
	if t.daemon == nil {
		if t.spec.Userns == "private" {
			return nil, fmt.Errorf("userns private needs the lab daemon's shim: on your own daemon, start it with --userns-remap and leave userns out of the profile")
		}
		mode, note := fieldNetworkMode(want, spec.Network)
		return &netPlan{mode: mode, note: note}, nil
	}
	rt := t.spec.Runtime
	if rt == "" {
		rt = "runc"
	}
	p := &netPlan{mode: "none", runtime: runtimePrefix + rt, shimmed: true}
	if !t.daemon.HasRuntime(p.runtime) {
		return nil, fmt.Errorf("runtime %q has no Gatehouse shim on the lab daemon (it has: %v)", rt, t.daemon.Runtimes())
	}
	if want != NetworkNone && spec.Network.NetnsPath == "" {
		p.note = fmt.Sprintf("network %s asked, but the harness gave no session network: none", want)
		return p, nil
	}
	switch want {
	case NetworkNone:
		p.note = "Docker network none: a new, empty namespace"
	case NetworkLab:
		p.netns = spec.Network.NetnsPath
		p.egress = len(t.opts.EgressRules) > 0
		p.note = "joined session netns " + spec.Network.NetnsName + " through the " + p.runtime + " shim (Docker mode none)"
	case NetworkHost:
		p.mode, p.netns = "host", spec.Network.NetnsPath
		p.note = "Docker host mode, placed in netns " + spec.Network.NetnsName + " (the lab's) through the " + p.runtime + " shim"
	}
	resolver := t.opts.Resolver
	if resolver == "" {
		resolver = spec.Network.Resolver
	}
	if resolver != "" {
		p.resolvFile = resolvPath(t.daemon, spec.Name)
		if err := os.WriteFile(p.resolvFile, []byte("nameserver "+resolver+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("resolv.conf: %w", err)
		}
	}
	return p, nil
}

// cleanup removes what the plan made on the host; safe on a nil plan and twice.
func (p *netPlan) cleanup() {
	if p == nil {
		return
	}
	if p.resolvFile != "" {
		_ = os.Remove(p.resolvFile)
	}
	if p.filesDir != "" {
		_ = os.RemoveAll(p.filesDir)
	}
	if p.entryFile != "" {
		_ = os.Remove(p.entryFile)
		_ = os.Remove(strings.TrimSuffix(p.entryFile, ".json") + ".flags")
		_ = os.Remove(strings.TrimSuffix(p.entryFile, ".json") + ".caps")
	}
}

// release flushes the ruleset and removes the plan's files.
func (p *netPlan) release(ctx context.Context) error {
	if p == nil {
		return nil
	}
	err := p.applied.Flush(ctx)
	p.applied = nil
	p.cleanup()
	return err
}

// fieldNetworkMode is the mapping on a daemon that is not ours (no shim):
// "lab" is its default bridge, whose reach is the team's business.
func fieldNetworkMode(profile string, n targets.Network) (string, string) {
	switch profile {
	case NetworkHost:
		return "host", "the daemon's network namespace"
	case NetworkLab:
		if n.NetnsPath == "" {
			return "none", "lab network asked, but the harness gave no session network: none"
		}
		return "bridge", "the daemon's default bridge; session netns " + n.NetnsName + " is not joined (no shim on this daemon)"
	default:
		return "none", ""
	}
}
