// Package runner is one run of the gates against a target, from a checked
// profile and a made target to a run folder with its verdicts: the lab up
// in its own namespaces, the suite, the lab closed, each scenario's verdict
// made once from its observation and everything the endpoints recorded,
// then results.json, run.json and the JUnit and cucumber reports written
// from the final verdicts.
//
// `gatehouse run`, `gatehouse rehearse` (Spec.Rehearsal, rehearsal.go) and
// gatehousetest all go through it, so a team's go test and the CLI earn
// their verdicts the same way: each face makes a Request of its flags or
// options and NewSpec checks it and decides its defaults (request.go); the
// run ends in Finish (seal.go: sealed, verified again, archived, indexed).
// Flags, printing and exit codes stay in cmd/gatehouse.
package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/corpus"
	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/features"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/steps"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// Spec is a validated run request. Zero values: the run id is made here,
// progress is discarded, concurrency is the suite's default (2).
type Spec struct {
	ID          string // "" → NewID()
	Out         string // folder that receives the run folder
	Profile     *profile.Profile
	ProfileFile string
	Plan        profile.Plan // profile.NewPlan of Profile and Gates
	Target      targets.Target
	TargetName  string
	Gates       []string
	// Shard, when set, runs only its part of the scenarios of Gates
	// (features.Scenarios, in their stable order); Record.Group names the
	// run group the shards belong to.
	Shard       features.Shard
	Features    fs.FS
	ProbePath   string
	Public      lab.Public
	Concurrency int
	Seed        int64
	MaxStop     time.Duration
	Detectors   []detect.Source
	Respond     *steps.Response
	// Agent, when set, runs the normal path; Model gives it the lab's
	// scripted model once the lab is up.
	Agent steps.Agent
	Model func(*lab.Lab) steps.Scripter
	// Record holds what the caller knows about the run (commit, pipeline,
	// model, agent and its version); the rest of run.json is filled here.
	Record   evidence.Run
	Progress io.Writer
	// Begin, when set, is called once the folder holds plan.json and the
	// policy, before the lab comes up: the CLI prints its header there.
	Begin func(rec *evidence.Run)
	// Rehearsal, when set, makes the run the report-triage rehearsal
	// (rehearsal.go): its inputs and outcome in rehearsal/, and the
	// original repository checked again once the run is over.
	Rehearsal *Rehearsal
}

// Outcome is a finished run whose folder still has its partial name:
// Seal gives it its final one.
type Outcome struct {
	Folder  *evidence.Folder
	Record  *evidence.Run
	Results []evidence.Result
	// Rehearsal is what a rehearsal found, with its final verdict (nil
	// when the run was not one).
	Rehearsal *steps.RehearsalOutcome
}

// Execute runs spec. A run that could not finish is an error, its folder
// kept under its partial name, marked incomplete; the verdicts of a run that
// finished are in the Outcome, whatever they are.
func Execute(ctx context.Context, spec Spec) (*Outcome, error) {
	progress := spec.Progress
	if progress == nil {
		progress = io.Discard
	}
	id := spec.ID
	if id == "" {
		id = NewID()
	}
	prof := spec.Profile
	var only []string
	gates := spec.Gates
	if spec.Shard.N > 0 {
		sel, err := ShardScenarios(spec.Features, spec.Gates, spec.Shard)
		if err != nil {
			return nil, err
		}
		// The run records and runs the shard's gates only.
		gates = nil
		for _, s := range sel {
			only = append(only, s.Location())
			if !slices.Contains(gates, s.Gate) {
				gates = append(gates, s.Gate)
			}
		}
	}
	folder, err := evidence.Create(spec.Out, id)
	if err != nil {
		return nil, err
	}
	rec := spec.Record
	rec.ID, rec.Harness, rec.Target, rec.Profile = id, evidence.HarnessVersion(), spec.TargetName, prof.Name
	rec.ProfileFile, rec.PolicyDigest, rec.PolicyFiles = spec.ProfileFile, prof.Digest(), map[string]string{}
	rec.Corpus, rec.Gates, rec.Seed, rec.Start = corpus.Version(), gates, spec.Seed, time.Now().UTC()
	rec.Shard, rec.Scenarios = spec.Shard.String(), only
	for _, w := range spec.Plan.Warnings {
		rec.ProfileWarnings = append(rec.ProfileWarnings, w.String())
	}
	if err := folder.WriteJSON(evidence.PlanFile, spec.Plan); err != nil {
		folder.Abandon()
		return nil, err
	}
	for name, b := range prof.Files() {
		rec.PolicyFiles[name] = evidence.SHA256(b)
		if err := folder.WriteFile(filepath.Join(evidence.PolicyDir, name), b); err != nil {
			folder.Abandon()
			return nil, err
		}
	}
	if rh := spec.Rehearsal; rh != nil {
		if err := folder.WriteJSON(evidence.RehearsalInputsFile, rh.Inputs); err != nil {
			folder.Abandon()
			return nil, err
		}
	}
	if spec.Begin != nil {
		spec.Begin(&rec)
	}

	cfg := steps.Config{
		Target: spec.Target, Network: string(prof.Network), ProbePath: spec.ProbePath, Features: spec.Features,
		Gates: gates, Scenarios: only, Folder: folder, Progress: progress, Concurrency: spec.Concurrency, Seed: spec.Seed,
		SecretProcess: steps.SecretProcess{Where: prof.SecretProcess.Where, User: prof.SecretProcess.User, OtherUser: profile.OtherUser},
		StopCommand:   prof.Limits.StopCommand,
		Temporary:     prof.Limits.Temporary,
		Resolver:      prof.Resolver,
		MaxStop:       spec.MaxStop,
		BreachReach:   breachReach(spec.Plan.Controls),
		Allow:         prof.Allow.Evidence(),
		Detectors:     spec.Detectors,
		Respond:       spec.Respond,
	}
	if spec.Rehearsal != nil {
		cfg.Rehearsal = spec.Rehearsal.Steps
	}
	var l *lab.Lab
	closeLab := func() error { return nil }
	if cfg.Network != steps.NetNone {
		t0 := time.Now()
		// Every hit goes to the trace as it arrives, even past the in-memory cap.
		l, err = lab.Up(ctx, lab.Options{HitLog: folder.Writer(evidence.HitsTrace), Public: spec.Public,
			Transcript: folder.Writer(evidence.TranscriptTrace)})
		if err != nil {
			folder.Abandon()
			return nil, fmt.Errorf("run: bring the lab up: %w", err)
		}
		closeLab = sync.OnceValue(func() error { return l.Close(context.WithoutCancel(ctx)) })
		defer closeLab()
		cfg.Lab, cfg.LabNetns = l, "/run/netns/"+l.Name()
		if spec.Agent != nil {
			cfg.Agent, cfg.AgentUID = spec.Agent, prof.Paths.Normal.UID
			if spec.Model != nil {
				cfg.Model = spec.Model(l)
			}
		}
		pub := l.Addrs().Public
		fmt.Fprintf(progress, "lab %s up and sealed (no route out) in %s; public-looking callback %s, %s, authority %s\n",
			l.Name(), time.Since(t0).Round(time.Millisecond), pub.CallbackV4, pub.CallbackV6, pub.AuthorityV4)
	}
	fmt.Fprintf(progress, "running %s on both paths\n", strings.Join(gates, ", "))
	out, runErr := steps.Run(ctx, cfg)
	// The lab closes before any verdict is made final or written: no hit
	// can arrive after this point.
	if err := closeLab(); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("run: close the lab: %w", err))
	}
	rec.End = time.Now().UTC()
	var results []evidence.Result
	if out != nil {
		rec.Effective = out.Effective
		rec.ImageDigest = ImageDigest(out.Effective)
		results = out.Results
		rec.HostWrites = out.HostWrites
		ReportHostWrites(progress, out.HostWrites)
	}
	if results == nil {
		results = []evidence.Result{}
	}
	if l != nil {
		n := 0
		if out != nil {
			// Each scenario's one verdict, over the whole record; the
			// step-time verdicts were provisional.
			n = out.Judge(l.Hits()) // results aliases out.Results
		}
		n += evidence.Recheck(results, l.Hits(), l.Dropped())
		drops, derr := l.KernelDrops()
		if len(drops) > 0 || derr != nil {
			fmt.Fprintf(progress, "kernel drops at the lab's sockets: %s%s\n", strings.Join(drops, ", "), errOrNil(derr))
		}
		if n += evidence.RecheckDrops(results, drops, derr); n > 0 {
			fmt.Fprintf(progress, "%d verdict(s) changed by what the endpoints recorded after them\n", n)
		}
	}
	// Every trace is closed: what each left out past its limit is final.
	n, err := closeTraces(folder, &rec, results)
	if err != nil {
		runErr = errors.Join(runErr, err)
	}
	if n > 0 {
		fmt.Fprintf(progress, "%d verdict(s) made INCONCLUSIVE by a trace that reached its limit (run.json traces_cut)\n", n)
	}
	if err := folder.Err(); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("run: evidence incomplete: %w", err))
	}
	if spec.Rehearsal != nil {
		// The original repository once more, after everything: a change
		// makes the rehearsal FAIL.
		if err := spec.Rehearsal.checkOriginal(ctx, results); err != nil {
			runErr = errors.Join(runErr, err)
		}
	}
	// The JUnit and cucumber reports are views of these final verdicts,
	// every check above included: written now, never at step time.
	if out != nil {
		if err := out.WriteReports(folder, results); err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("run: %w", err))
		}
	}
	var rehearsal *steps.RehearsalOutcome
	if spec.Rehearsal != nil {
		oc := spec.Rehearsal.outcome(results, runErr)
		rehearsal = &oc
		if err := writeOutcome(folder, oc); err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("run: evidence incomplete: %w", err))
		}
	}
	if err := writeRecord(folder, &rec, results, runErr, "run"); err != nil {
		return nil, err
	}
	return &Outcome{Folder: folder, Record: &rec, Results: results, Rehearsal: rehearsal}, nil
}

// The real lab is the one steps.Lab with every ability.
var _ steps.Lab = (*lab.Lab)(nil)

// ErrEmptyShard means a shard selects no scenario (more shards than
// scenarios): refused before anything starts, never an empty pass.
var ErrEmptyShard = errors.New("run: the shard selects no scenario")

// ShardScenarios is the shard's part of the scenarios of gates.
func ShardScenarios(fsys fs.FS, gates []string, sh features.Shard) ([]features.Scenario, error) {
	all, err := features.Scenarios(fsys, gates)
	if err != nil {
		return nil, err
	}
	sel := sh.Select(all)
	if len(sel) == 0 {
		return nil, fmt.Errorf("%w: shard %s of %d scenario(s)", ErrEmptyShard, sh, len(all))
	}
	return sel, nil
}

// NewID is a run id: the UTC time and three random bytes.
func NewID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b)
}

// ImageDigest is the sandbox image the runtime reported (Config.Image) for
// every path; "" when the target has no image or the paths disagree (then
// nothing is claimed).
func ImageDigest(eff map[string]any) string {
	d := ""
	for _, v := range eff {
		c, ok := v.(targets.Config)
		if !ok {
			continue
		}
		id := c.Image
		if !strings.HasPrefix(id, "sha256:") {
			continue
		}
		if d != "" && d != id {
			return ""
		}
		d = id
	}
	return d
}

// breachReach is the plan's reach of each control on the assume-breach
// path, for the takedown to check against what root really got done.
func breachReach(cs []profile.Control) map[string]string {
	m := map[string]string{}
	for _, c := range cs {
		if r := c.Reach[string(targets.PathBreach)]; r != "" {
			m[c.Name] = r
		}
	}
	return m
}

// errOrNil renders err for a progress line ("" when nil).
func errOrNil(err error) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}
