package runner

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/features"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/steps"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// Request is what a face asks of a run, before anything is checked: the
// CLI's flags, gatehousetest's Options. NewSpec checks it and makes the
// Spec, so the defaults and refusals are decided here once for every verb
// and for gatehousetest. Zero values are the defaults.
type Request struct {
	// Profile is the loaded profile (profile.Load); NewSpec checks it
	// (profile.Check). ProfileFile is recorded in run.json as given.
	Profile     *profile.Profile
	ProfileFile string
	// Features are the .feature files to run; nil: the built-in gates.
	Features fs.FS
	// Gates are the gates to run, each one of Features; nil: all of them.
	Gates []string
	// Shard, when set, runs only its part of the scenarios; it needs Group.
	Shard       features.Shard
	Group       string        // the run group, recorded ("" for none)
	Out         string        // folder that receives the run folder
	Concurrency int           // 0: the suite's default
	Seed        int64         // 0: file order
	MaxStop     time.Duration // 0: steps.DefaultMaxStop
	// Signed says the run will be sealed in this process, with the key at
	// SignKey ("" for keyless): a profile that puts the host or the key
	// within the guest's reach is refused (CheckSigning).
	Signed  bool
	SignKey string
	// Agent runs the normal path: "" or "probe" for Gatehouse's probe, or
	// an installed agent CLI (claude-code, codex, qwen-code, exec:PATH)
	// driven by the lab's scripted model. AgentSandbox is "on" or "off"
	// (""), the agent's own sandbox. Agent is recorded as given.
	Agent, AgentSandbox string
	// What the evidence says was tested.
	Commit, Pipeline, Model string
	// PlanOnly stops once the profile, gates, shard and signing are
	// checked and the plan is made: nothing is opened (run --check).
	PlanOnly bool
}

// NewSpec checks req and makes the run's Spec, before anything starts:
// the profile (profile.Check: the egress ruleset by nft in a scratch
// namespace, bwrap namespaces, stop_command), the gates against the
// features, the shard, signing next to this profile, the agent's install
// and the lab's public-looking addresses ($GATEHOUSE_LAB_PUBLIC_*). A
// refusal is a *ConfigError (the CLI's exit 2). What the face finds or
// opens itself it sets on the Spec: Target, ProbePath, Detectors, Respond,
// Progress and Begin.
func NewSpec(ctx context.Context, req Request) (*Spec, error) {
	prof := req.Profile
	if prof == nil {
		return nil, &ConfigError{fmt.Errorf("run: no profile")}
	}
	if err := prof.Check(ctx); err != nil {
		return nil, &ConfigError{err}
	}
	fsys := req.Features
	if fsys == nil {
		fsys = features.FS
	}
	known, err := features.Gates(fsys)
	if err != nil {
		return nil, &ConfigError{err}
	}
	gates := known
	if req.Gates != nil {
		gates = nil
		for _, g := range req.Gates {
			if !slices.Contains(known, g) {
				return nil, &ConfigError{fmt.Errorf("run: unknown gate %q; known gates: %s", g, strings.Join(known, ", "))}
			}
			gates = append(gates, g)
		}
	}
	planGates := gates
	if req.Shard.N > 0 {
		if req.Group == "" {
			return nil, &ConfigError{fmt.Errorf("run: shard %s needs a run group", req.Shard)}
		}
		// Refused here, not after the lab is up: a shard of nothing.
		sel, err := ShardScenarios(fsys, gates, req.Shard)
		if err != nil {
			return nil, &ConfigError{fmt.Errorf("run: --shard %s: %w", req.Shard, err)}
		}
		// The plan shows the shard's gates; Execute gets them all and
		// takes the same shard of them.
		planGates = nil
		for _, s := range sel {
			if !slices.Contains(planGates, s.Gate) {
				planGates = append(planGates, s.Gate)
			}
		}
	}
	maxStop := req.MaxStop
	if maxStop == 0 {
		maxStop = steps.DefaultMaxStop
	}
	spec := &Spec{
		Out: req.Out, Profile: prof, ProfileFile: req.ProfileFile, Plan: profile.NewPlan(prof, planGates, true),
		TargetName: prof.Target, Gates: gates, Shard: req.Shard, Features: fsys,
		Concurrency: req.Concurrency, Seed: req.Seed, MaxStop: maxStop,
		Record: evidence.Run{Commit: req.Commit, Pipeline: req.Pipeline, Model: req.Model, Agent: req.Agent, Group: req.Group},
	}
	if req.Signed {
		// Before the key is read and before anything starts: a guest that
		// reaches the host reads the key of the process that runs it.
		if err := CheckSigning(prof, req.SignKey); err != nil {
			return nil, &ConfigError{fmt.Errorf("run: %w", err)}
		}
	}
	if req.PlanOnly {
		return spec, nil
	}
	if err := useAgent(spec, req); err != nil {
		return nil, err
	}
	if spec.Public, err = lab.PublicFromEnv(os.Getenv); err != nil {
		return nil, &ConfigError{fmt.Errorf("run: %w", err)}
	}
	return spec, nil
}

// useAgent opens the installed agent req names for the normal path and
// records what it is; the probe needs nothing. Nothing is fetched: a run
// never downloads, and never falls back to the probe.
func useAgent(spec *Spec, req Request) error {
	sandbox := req.AgentSandbox
	if sandbox == "" {
		sandbox = "off"
	}
	if sandbox != "on" && sandbox != "off" {
		return &ConfigError{fmt.Errorf("run: --agent-sandbox %q: say on or off", req.AgentSandbox)}
	}
	if req.Agent == "" || req.Agent == "probe" {
		return nil
	}
	prof := spec.Profile
	if prof.Network == profile.NetworkNone {
		return &ConfigError{fmt.Errorf("run: --agent %s needs the lab's scripted model, and profile %s has network none", req.Agent, prof.Name)}
	}
	a, err := openAgent(req.Agent, sandbox, prof.Paths.Normal.UID, prof.Target)
	if err != nil {
		return err
	}
	spec.Record.AgentVersion, spec.Record.AgentDigest = a.in.Version, "sha256:"+a.in.Binary.SHA256
	spec.Record.AgentSandbox = sandbox
	spec.Agent, spec.Model = a, func(l *lab.Lab) steps.Scripter { return labModel{l} }
	return nil
}
