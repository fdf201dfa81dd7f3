// Package steps holds the godog step definitions for the gates and the
// runner that drives a godog suite against one target and records what
// happened. Steps are split by vocabulary (session, network, verdict), not by
// gate; each file registers its own steps.
package steps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cucumber/godog"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// Network modes a profile may ask for.
const (
	NetLab  = "lab"  // a session namespace joined to the lab
	NetNone = "none" // no network: the target isolates the session itself
	NetHost = "host" // the lab namespace itself ("host network" inside the lab)
)

// Config is one suite run against one target.
type Config struct {
	Target    targets.Target
	Network   string // NetLab, NetNone or NetHost
	Lab       Lab    // required unless Network is NetNone
	LabNetns  string // path of the lab namespace, for NetHost
	ProbePath string // host path of the static probe binary
	Features  fs.FS  // holds *.feature files at its root
	Gates     []string
	// Scenarios, when set, are the only scenarios run, as godog locations
	// ("file.feature:LINE", features.Scenario.Location): a shard of the
	// run. Godog never sees the others, so they leave no verdict and no
	// trace. Empty: every scenario of Gates.
	Scenarios []string
	Folder    *evidence.Folder // traces and reports go here; may be nil in unit tests
	Progress  io.Writer
	// SecretProcess: where the profile says the platform runs a process
	// holding a secret (the zero value: it runs none), so the
	// long-lived-secret gate plants one there.
	SecretProcess SecretProcess
	// StopCommand is the profile's own stop (argv run on the host), sent by
	// the stop-signal gate before the target's Stop.
	StopCommand []string
	// Agent, when set, runs the normal path instead of the probe: a real
	// agent CLI driven by the lab's scripted model (Model), as AgentUID.
	Agent    Agent
	Model    Scripter
	AgentUID int
	// Resolver is the nameserver the profile gives the sandbox ("" = the
	// lab's): where a name lookup's first packet goes.
	Resolver string
	// MaxStop bounds the profile's own stop limit (DefaultMaxStop when 0).
	MaxStop time.Duration
	// Temporary are host paths (with {{place:NAME}} references) the
	// profile says its stop removes; stop-signal FAILs when one is left.
	Temporary []string
	// Concurrency is how many scenarios run at once (0: DefaultConcurrency,
	// or DefaultAgentConcurrency with an Agent).
	Concurrency int
	Seed        int64
	// Settle is how long to wait after the last attempt for endpoints to
	// record what arrived (packets already delivered may still be queued).
	Settle Duration
	// BreachReach is the run plan's word on each control (by the plan's
	// control name) for the assume-breach path: "inside" or "outside" the
	// guest's reach. The takedown checks it against what root really got
	// done; nil when there is no plan.
	BreachReach map[string]string
	// Allow is the profile's allow declaration: what the allowed
	// destination may receive. The external-callback gate FAILs a contact
	// there outside it; without it (nil) what arrived is a finding.
	Allow []evidence.Allow
	// Detectors are the monitors and alert sources whose events are
	// matched to attempts (detection, scored apart from verdicts). Empty:
	// detection is not measured, and results say so, never "missed".
	Detectors []detect.Source
	// DetectGrace is how late after an attempt an event may arrive and
	// still count (DefaultDetectGrace when 0); MaxEvents bounds the
	// run's event buffer (DefaultMaxEvents when 0).
	DetectGrace time.Duration
	MaxEvents   int
	// Respond, when set, answers each session's first detection (a stop,
	// or the team's hook) and measures its effects from outside. It needs
	// a detector.
	Respond *Response
	// Rehearsal, when set, is the report-triage rehearsal's repository,
	// report and intake subject (features.Rehearsal, rehearse.go).
	Rehearsal *Rehearsal
}

// SecretProcess mirrors the profile's secret_process: Where is "inside" or
// "outside" ("" for none); User, inside only, "agent" or "other", and
// OtherUser the "uid:gid" that "other" runs as.
type SecretProcess struct {
	Where, User, OtherUser string
}

// DefaultConcurrency is how many scenarios run at once unless told: a
// scenario mostly waits (on the sandbox, the lab, a settle), and on the
// 2-core machines the bench runs on, every gate on bwrap-hardened took
// 16.3, 9.2, 5.8 and 4.0 s at 1, 2, 4 and 8 (docs/bench.md, "cost growth").
const DefaultConcurrency = 8

// DefaultAgentConcurrency is the default when an agent CLI drives the
// normal path: each keeps a core busy while it runs (a Node.js process
// with its model round trips), so four at once on two cores time out.
const DefaultAgentConcurrency = 2

// Duration is a time in milliseconds, kept simple for configs.
type Duration int

// Outcome is what a suite run produced.
type Outcome struct {
	Results   []evidence.Result
	Attempts  []evidence.Attempt
	Effective map[string]any // per path, what Inspect read back
	Status    int            // godog's own status (0 ok, 1 failed, 2 option error)
	// HostWrites is what the probe wrote on the host itself and what
	// became of it once every session was gone (hostwrites.go).
	HostWrites *evidence.HostWrites
	judged     map[string]judged // by session/gate: what Judge makes the final verdicts from
	// log is what godog ran, and pickles which scenario each of Results
	// is (in their order): the reports are made from them (WriteReports).
	log     *reportLog
	pickles []pickleRef
}

// ErrNoScenarios means the selection matched nothing: never a pass.
var ErrNoScenarios = errors.New("steps: no scenario matched the selected gates")

// Run runs the suite. Scenario verdicts are in Outcome.Results; the error is
// only for things that stopped the run as a whole.
func Run(ctx context.Context, cfg Config) (*Outcome, error) {
	if cfg.Target == nil {
		return nil, errors.New("steps: no target")
	}
	if cfg.Network != NetNone && cfg.Lab == nil {
		return nil, fmt.Errorf("steps: network %q needs the lab", cfg.Network)
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
		if cfg.Agent != nil {
			cfg.Concurrency = DefaultAgentConcurrency
		}
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 250
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	r := &runner{cfg: cfg, ctx: ctx, effective: map[string]any{}, hw: newHostWrites()}
	det, err := startDetectors(ctx, cfg)
	if err != nil {
		return nil, err
	}
	r.det = det
	if cfg.Respond != nil {
		if det == nil {
			return nil, errors.New("steps: a response (--respond) needs a detector (--monitor or --alerts) to answer")
		}
		if !cfg.Respond.Stop && len(cfg.Respond.Hook) == 0 {
			return nil, errors.New("steps: a response is either a stop or a hook command")
		}
		r.resp = newResponder(r, cfg.Respond)
		det.onEvent = r.resp.consider
	}
	r.log = newReportLog()
	suiteName, release := r.log.register()
	defer release()
	opts := godog.Options{
		// The log only: the reports are written from the final verdicts
		// (Outcome.WriteReports, reports.go), never by godog at step time.
		Format:         logFormat,
		Output:         io.Discard,
		FS:             cfg.Features,
		Paths:          paths(cfg.Features, cfg.Scenarios),
		Strict:         true,
		NoColors:       true,
		Concurrency:    cfg.Concurrency,
		Randomize:      cfg.Seed,
		Tags:           tagExpr(cfg.Gates),
		DefaultContext: ctx,
	}
	suite := godog.TestSuite{
		Name:                suiteName,
		ScenarioInitializer: r.initScenario,
		Options:             &opts,
	}
	status := suite.Run()
	// Every session is gone: what the probe wrote on the host is taken
	// back now, whatever the verdicts (and on Ctrl-C too).
	hostWrites := r.hw.undo()
	var detErr error
	if r.det != nil {
		detErr = r.det.stop()
		r.det.writeTrace(cfg.Folder)
	}
	out := &Outcome{Status: status, Effective: r.effective, judged: map[string]judged{}, HostWrites: hostWrites, log: r.log}
	r.mu.Lock()
	for k, v := range r.judged {
		out.judged[k] = v
	}
	order := make([]int, len(r.results))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := r.results[order[i]], r.results[order[j]]
		if a.Gate != b.Gate {
			return a.Gate < b.Gate
		}
		return a.Path < b.Path
	})
	for _, i := range order {
		out.Results = append(out.Results, r.results[i])
		out.pickles = append(out.pickles, r.pickles[i])
	}
	out.Attempts = append(out.Attempts, r.attempts...)
	r.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("steps: run interrupted: %w", err)
	}
	if status == 2 {
		return out, errors.New("steps: godog refused its options (see its message above)")
	}
	if len(out.Results) == 0 {
		return out, ErrNoScenarios
	}
	if detErr != nil {
		return out, fmt.Errorf("steps: closing detectors: %w", detErr)
	}
	return out, nil
}

func paths(features fs.FS, scenarios []string) []string {
	if len(scenarios) > 0 {
		return scenarios
	}
	files, err := fs.Glob(features, "*.feature")
	if err != nil || len(files) == 0 {
		return []string{"."}
	}
	// Longest first: with several scenarios at once, a long one started
	// last would run alone at the end. The ranking is the bench's
	// (docs/bench.md); features it does not name follow in name order.
	sort.SliceStable(files, func(i, j int) bool { return longRank(files[i]) < longRank(files[j]) })
	return files
}

// longFirst are the gates whose scenarios take longest, longest first.
var longFirst = []string{"stop-signal", "cross-session", "reusable-state", "cloud-metadata", "external-callback", "foreign-storage"}

func longRank(file string) int {
	for i, g := range longFirst {
		if file == g+".feature" {
			return i
		}
	}
	return len(longFirst)
}

func tagExpr(gates []string) string {
	var tags []string
	for _, g := range gates {
		tags = append(tags, "@"+strings.TrimPrefix(g, "@"))
	}
	return strings.Join(tags, ",")
}

// runner is shared by every scenario of one suite run.
type runner struct {
	cfg Config
	ctx context.Context // the run's context: cancelled on Ctrl-C

	mu        sync.Mutex
	seq       int
	results   []evidence.Result
	pickles   []pickleRef // which scenario each of results is
	log       *reportLog  // what godog ran, for the reports
	judged    map[string]judged
	attempts  []evidence.Attempt
	effective map[string]any
	det       *detector   // nil: detection not measured
	resp      *responder  // nil: no response asked for
	hw        *hostWrites // where the probe wrote on the host
}

func (r *runner) nextSession() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	return fmt.Sprintf("s%d", r.seq)
}

// record keeps a scenario's provisional result, and what its final
// verdict is made from when it has an observation.
func (r *runner) record(res evidence.Result, obs observation, cl closing, pickle string) {
	r.mu.Lock()
	r.results = append(r.results, res)
	r.pickles = append(r.pickles, pickleRef{id: pickle, gate: res.Gate, path: res.Path, session: res.Session, name: res.Scenario})
	if obs != nil {
		if r.judged == nil {
			r.judged = map[string]judged{}
		}
		r.judged[res.Session+"/"+res.Gate] = judged{obs: obs, closing: cl, provisional: res}
	}
	done := len(r.results)
	r.mu.Unlock()
	progress(r.cfg.Progress, done, res)
}

func (r *runner) recordAttempts(as []evidence.Attempt) {
	r.mu.Lock()
	r.attempts = append(r.attempts, as...)
	r.mu.Unlock()
	if r.cfg.Folder != nil {
		for _, a := range as {
			_ = r.cfg.Folder.AppendJSONL(evidence.AttemptsTrace, a)
		}
	}
}

func (r *runner) initScenario(sc *godog.ScenarioContext) {
	sc.Before(r.before)
	sc.After(r.after)
	sc.StepContext().After(r.log.stepEnded)
	registerSession(sc, r)
	registerNetwork(sc, r)
	registerVerdict(sc, r)
	registerSessions(sc, r)
	registerSecrets(sc, r)
	registerRehearsal(sc, r)
	sc.After(r.finish) // last: after every teardown hook
}
