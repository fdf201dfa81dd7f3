package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/index"
	"github.com/gatehouse-dev/gatehouse/evidence/keyless"
	"github.com/gatehouse-dev/gatehouse/evidence/keys"
	"github.com/gatehouse-dev/gatehouse/features"
	"github.com/gatehouse-dev/gatehouse/internal/ledger"
	"github.com/gatehouse-dev/gatehouse/internal/runner"
	"github.com/gatehouse-dev/gatehouse/internal/steps"
	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/termsafe"
)

const runHelp = `Usage: gatehouse run --profile FILE [--target NAME] [--gates LIST] [--out DIR]
                     [--shard K/N --group ID]
                     [--key cosign.key | --keyless --trusted-root FILE] [--archive] [--db PATH]
                     [--output text|json]
       gatehouse run --check --profile FILE [--gates LIST] [--output text|json]

Runs the gates against a sandbox target, prints each scenario's verdict as it
finishes and a summary table at the end, and writes a run folder
(run.json, results.json, plan.json, report.html, policy/, traces/, reports/)
under --out.
On a terminal, a status line under the progress counts the verdicts so far
and the time spent; in CI (not a terminal, or TERM=dumb) the progress is
plain lines only.

With --key (a cosign private key; its password comes from COSIGN_PASSWORD, as
with cosign), the folder is sealed before it gets its final name: SHA256SUMS
and signed attestations/ are added, so 'gatehouse verify' and 'gatehouse gate'
accept it. Without --key the folder is left UNSIGNED: it is still indexed and
readable, but verify and gate refuse it as unsigned. --archive also writes
<out>/<id>.tar.gz. Every finished run, signed or not, is recorded in the
SQLite index (default <out>/gatehouse-index.db).

With --keyless (in CI) the seal uses an ephemeral key, a Fulcio certificate
for the job's OIDC identity token (from --oidc-token-file or
$SIGSTORE_ID_TOKEN, read when sealing; never an interactive login) and a
Rekor entry; --trusted-root is the trusted_root.json the bundle must verify
against before it is indexed. Verify it with --certificate-identity and
--certificate-oidc-issuer. (Tested only against an in-process virtual
Sigstore: see docs/evidence.md.)

--shard K/N runs the K-th of N parts of the selected scenarios, so that N CI
runners share a run: the scenarios are sorted by gate and name and every N-th
is taken, so every machine computes the same parts, each scenario is in
exactly one, and both paths of a gate stay in the same shard. Each shard
writes and seals its own run folder with the run group --group (default: the
pipeline id, --pipeline or $GATEHOUSE_PIPELINE; one of them is required with
--shard), recorded in run.json and the index. 'gatehouse gate' decides each
gate and path from the newest run that has it, so the shards of a group gate
a release together; 'gatehouse merge --group ID' writes one signed report
over them (docs/ci.md).

Targets (the profile's target field, or --target): bwrap (the embedded
default), docker (runc or any runtime the lab daemon knows) and gvisor (docker
with runsc); docs/profiles.md and docs/docker.md describe their profiles.

Before anything starts, the profile is checked: strict YAML, bubblewrap
option arity, docker fields, every {{place:NAME}} and {{secret:NAME}}, the
resolver, the stop_command, bwrap namespaces against 'network', and the egress
ruleset (nft -c, in a network namespace that exists only while nft runs). A
profile that fails is exit 2 with its file, line and reason, and nothing is
started. The run then prints its plan: target, network, identity and
capabilities per path, the ruleset's digest and whether it applies, mounts,
env (secrets as {{secret:NAME}}, never values), gates, stop, where each control
lives (outside or inside the guest's reach, per path), and warnings for binds
of dangerous host paths (/, the engine sockets, /proc, /sys, /etc, homes, ...).
The plan is recorded as plan.json, the warnings in run.json.

--output json prints, after the run, exactly one JSON document on stdout
instead of the summary table (schema gatehouse.run/v1 in
docs/schemas/run.v1.json: id, folder, signed, signer, index, decision,
exit_code and per scenario gate, path, verdict, positive_control, reason,
detection, response); the plan and progress go to stderr then. A run that
could not finish prints no document.

--check does all of that and runs nothing: exit 0 and the plan when the profile
is valid, 2 when it is not. --output json prints the plan as JSON (schema in
docs/profiles.md).

--agent NAME has a real agent CLI (claude-code, codex, qwen-code, or
exec:PATH for a team's own) run the normal path instead of the probe: the lab's
scripted model makes it read the scenario's untrusted document and obey the
instruction in it, through its own tools (docs/agents.md). Install it first
with 'gatehouse agents install NAME'; a run never fetches one and never falls
back to the probe. --agent-sandbox on switches the agent's own sandbox on.

The lab of controlled endpoints is brought up in network namespaces of its own
for the run and removed afterwards. Needs root (namespaces, nftables).
Its public-looking callback and second DNS authority (192.88.99.10, 3ffe::10,
192.88.99.54 by default; they exist only inside the sealed lab) can be moved
with GATEHOUSE_LAB_PUBLIC_V4, GATEHOUSE_LAB_PUBLIC_V6 and
GATEHOUSE_LAB_PUBLIC_DNS_V4 (docs/lab.md).

Example:
  gatehouse run --profile targets/profiles/bwrap-hardened.yaml
  gatehouse run --check --profile team.yaml --output json
  gatehouse run --profile targets/profiles/docker-hardened.yaml --model m-2026-10 --agent codex
  gatehouse run --profile targets/profiles/bwrap-leaky.yaml --gates external-callback,cloud-metadata
  COSIGN_PASSWORD=... gatehouse run --profile targets/profiles/bwrap-hardened.yaml --key cosign.key --archive

Detection is scored apart from prevention (verdicts never change with it):
--monitor builtin (Gatehouse's own eBPF monitor), --alerts KIND:PATH (tail a
monitor's output: falco, tetragon, audit or ocsf; repeatable) and
--alerts-listen HOST:PORT (receive alerts POSTed by Falco http_output,
falcosidekick, CloudEvents or OCSF) name the sources. Each attempt is matched
to an event by session, kind, object and time window, never by time alone;
results.json gets a detection block per scenario (detected by which source
and rule, latency from the attempt's start to the event's receipt), the
summary a DETECTED column, traces/alerts.jsonl every event. Without a source
detection is "not measured", never "missed". A source this build does not
have is refused (exit 2), never silently left out.

Response is scored apart too: --respond stop answers each session's first
detection by revoking its broker token, cutting its link to the lab and
stopping it; --respond exec:PATH runs your hook instead (GATEHOUSE_SESSION,
GATEHOUSE_NETNS, GATEHOUSE_CGROUP, GATEHOUSE_PIDS in its environment). Either
way Gatehouse measures from outside when the processes were gone, when egress
was refused and when the token was refused, from the alert's receipt, at a
10ms polling resolution; results.json gets a responses block, the summary a
RESPONSE column. A forbidden thing that happened before the response still
FAILs its gate.

Exit codes: 0 every selected gate PASSed, 1 a gate FAILed, 3 a gate was
INCONCLUSIVE (and none failed) or the run could not finish, 2 usage or config.

Flags:
`

type runFlags struct {
	target, profile, gates, out, probe, features string
	suite                                        fs.FS  // a built-in suite instead of --features (rehearse)
	dockerHost                                   string // field mode: refused, see fieldRefusal
	model, agent, commit, pipeline               string // what the evidence says was tested
	agentSandbox                                 string
	key, db                                      string
	signing                                      signFlags   // keyless; see seal.go
	loaded                                       *sealerOnce // compare: one key load for all its runs
	archive                                      bool
	check                                        bool   // validate and print the plan only; see check.go
	output                                       string // text | json (--check: the plan; else the results)
	concurrency                                  int
	seed                                         int64
	quiet                                        bool
	maxStop                                      time.Duration
	shard, group                                 string      // --shard K/N, --group ID; see shardOf
	detect                                       detectFlags // --monitor, --alerts, --alerts-listen
}

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f runFlags
	fl := newFlagSet(ctx, "run")
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, runHelp); fl.PrintDefaults() }
	fl.StringVar(&f.profile, "profile", "", "profile YAML describing the sandbox (required)")
	fl.StringVar(&f.target, "target", "", "target adapter: bwrap, docker or gvisor; defaults to the profile's `target` field")
	fl.StringVar(&f.gates, "gates", "", "comma-separated gates to run (default: every gate in the features)")
	fl.StringVar(&f.out, "out", "gatehouse-runs", "folder that receives the run folder")
	fl.StringVar(&f.probe, "probe", "", "static probe binary (default: gatehouse-probe next to this binary, or $GATEHOUSE_PROBE)")
	fl.StringVar(&f.features, "features", "", "folder of .feature files to run instead of the built-in gates")
	fl.StringVar(&f.dockerHost, "docker-host", "", "a team's own Docker daemon (field mode; docker and gvisor targets): NOT BUILT, refused with exit 2 (docs/docker.md)")
	fl.IntVar(&f.concurrency, "concurrency", 0, "scenarios run at once; 0 = 8, or 2 with --agent (a scenario mostly waits on the sandbox and the lab, so 8 at once is fastest even on 2 cores; an agent CLI keeps a core busy)")
	fl.Int64Var(&f.seed, "seed", 0, "scenario order seed (0: file order); recorded in run.json")
	fl.BoolVar(&f.quiet, "quiet", false, "print only the summary")
	fl.DurationVar(&f.maxStop, "max-stop", steps.DefaultMaxStop, "the policy's maximum stop limit: stop-signal judges a profile whose limits.stop is longer against this instead")
	fl.StringVar(&f.model, "model", os.Getenv("GATEHOUSE_MODEL"), "model the agent uses, recorded in the evidence ($GATEHOUSE_MODEL)")
	fl.StringVar(&f.agent, "agent", "probe", "what runs the normal path: probe (Gatehouse's own), claude-code, codex, qwen-code or exec:PATH (a team's agent); a real agent is driven by the lab's scripted model (docs/agents.md) and must be installed first ('gatehouse agents install NAME')")
	fl.StringVar(&f.agentSandbox, "agent-sandbox", "off", "with a real agent: on or off, the agent's own sandbox (recorded in the evidence)")
	fl.StringVar(&f.commit, "commit", os.Getenv("GATEHOUSE_COMMIT"), "commit under test, recorded in the evidence ($GATEHOUSE_COMMIT)")
	fl.StringVar(&f.pipeline, "pipeline", os.Getenv("GATEHOUSE_PIPELINE"), "CI pipeline or job, recorded in the evidence ($GATEHOUSE_PIPELINE)")
	fl.StringVar(&f.shard, "shard", "", "run only the K-th of N parts of the scenarios, as K/N (e.g. 2/4); needs a run group (docs/ci.md)")
	fl.StringVar(&f.group, "group", "", "run group the run belongs to, recorded in the evidence (default with --shard: --pipeline, $GATEHOUSE_PIPELINE)")
	fl.StringVar(&f.key, "key", "", "cosign private key to seal the run with (password from COSIGN_PASSWORD); without it the run is unsigned")
	f.signing.register(fl)
	fl.BoolVar(&f.archive, "archive", false, "also write <out>/<id>.tar.gz of the run folder")
	fl.StringVar(&f.db, "db", "", "SQLite index to record the run in (default <out>/"+index.DefaultName+")")
	fl.BoolVar(&f.check, "check", false, "check the profile (everything a run would refuse) and print its plan; run nothing")
	fl.StringVar(&f.output, "output", "text", "text, or json: one document on stdout after the run (schema gatehouse.run/v1, docs/schemas/run.v1.json; progress goes to stderr); with --check the plan (docs/profiles.md)")
	f.detect.register(fl)
	shortFlags(fl)
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &usageError{err}
	}
	if fl.NArg() > 0 {
		return usagef("run: unexpected argument %q (flags go before nothing else; see --help)", fl.Arg(0))
	}
	if f.profile == "" {
		return usagef("run: --profile is required, e.g. --profile targets/profiles/bwrap-hardened.yaml")
	}
	if f.check {
		return runCheck(ctx, f, stdout)
	}
	if err := checkOutput("run", f.output); err != nil {
		return err
	}
	return execute(ctx, f, stdout, stderr)
}

// plan is a validated run request: the runner's Spec (runner.NewSpec)
// and what the run will be sealed with.
type plan struct {
	spec   *runner.Spec
	signer sealer // nil: the run stays unsigned
}

// shardOf reads --shard and --group. A shard needs a group, so that gate
// and merge can find its siblings: --group, or else the CI pipeline id
// (--pipeline, $GATEHOUSE_PIPELINE), which every shard of one pipeline
// shares.
func shardOf(f runFlags) (features.Shard, string, error) {
	group := f.group
	if f.shard == "" {
		return features.Shard{}, group, nil
	}
	sh, err := features.ParseShard(f.shard)
	if err != nil {
		return features.Shard{}, "", usagef("run: --shard: %v", err)
	}
	if group == "" {
		group = f.pipeline
	}
	if group == "" {
		return features.Shard{}, "", usagef("run: --shard %s needs a run group: give --group ID (or --pipeline / $GATEHOUSE_PIPELINE)", sh)
	}
	return sh, group, nil
}

// prepare validates a run request before anything is started: the
// profile is loaded, the flags become a runner.Request and runner.NewSpec
// checks it (profile.Check: the egress ruleset by nft in a scratch
// namespace, bwrap namespaces, stop_command; gates, shard, signing, agent),
// so a broken profile is exit 2 with its file and line, never a run of
// INCONCLUSIVE scenarios. With f.check it stops short of what only a real
// run needs (agent, probe, key).
func prepare(ctx context.Context, f runFlags) (*plan, error) {
	prof, err := kinds.Load(f.profile)
	if err != nil {
		return nil, &usageError{err}
	}
	if f.target != "" && f.target != prof.Target {
		return nil, usagef("run: --target %s but profile %s is for target %q", f.target, f.profile, prof.Target)
	}
	if f.dockerHost != "" {
		// Before anything is started or dialled: the daemon is not contacted.
		return nil, fieldRefusal(f.dockerHost, prof.Target)
	}
	req := runner.Request{
		Profile: prof, ProfileFile: f.profile, Out: f.out, Concurrency: f.concurrency, Seed: f.seed, MaxStop: f.maxStop,
		Signed: f.key != "" || f.signing.keyless, SignKey: f.key, Agent: f.agent, AgentSandbox: f.agentSandbox,
		Commit: f.commit, Pipeline: f.pipeline, Model: f.model, PlanOnly: f.check,
	}
	if f.features != "" {
		req.Features = os.DirFS(f.features)
	}
	if f.suite != nil {
		req.Features = f.suite
	}
	if f.gates != "" {
		for _, g := range strings.Split(f.gates, ",") {
			req.Gates = append(req.Gates, strings.TrimSpace(g))
		}
	}
	if req.Shard, req.Group, err = shardOf(f); err != nil {
		return nil, err
	}
	p := &plan{}
	if p.spec, err = runner.NewSpec(ctx, req); err != nil {
		return nil, err
	}
	if err := f.detect.validate(); err != nil {
		return nil, err
	}
	if f.check {
		return p, nil
	}
	if p.spec.Respond, err = f.detect.response(); err != nil {
		return nil, err
	}
	if p.spec.Detectors, err = detectors(f.detect); err != nil {
		return nil, err
	}
	if p.spec.ProbePath, err = locateProbe(f.probe); err != nil {
		return nil, &usageError{err}
	}
	// Before the run, not after: a wrong password or a missing token must
	// not cost a whole run.
	if p.signer, err = f.loaded.load("run", f.key, f.signing); err != nil {
		return nil, err
	}
	// Signed with a key, the password is gone already. What this run does
	// not sign with would only be a thing to steal from a process that
	// starts sandboxes (a keyless run reads its token again when sealing).
	drop := []string{keys.PasswordEnv}
	if !f.signing.keyless {
		drop = append(drop, keyless.TokenEnv)
	}
	for _, name := range drop {
		if err := keys.Forget(name); err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
	}
	return p, nil
}

func locateProbe(flagPath string) (string, error) {
	cands := []string{flagPath, os.Getenv("GATEHOUSE_PROBE")}
	if exe, err := os.Executable(); err == nil {
		cands = append(cands, filepath.Join(filepath.Dir(exe), "gatehouse-probe"))
	}
	for _, c := range cands {
		if c == "" {
			continue
		}
		if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() {
			return filepath.Abs(c)
		}
		if c == flagPath {
			return "", fmt.Errorf("run: probe %s not found", c)
		}
	}
	return "", errors.New("run: no probe binary: build it with 'make build' (bin/gatehouse-probe) or pass --probe")
}

func execute(ctx context.Context, f runFlags, stdout, stderr io.Writer) error {
	progress := stdout
	if f.output == "json" {
		// stdout holds the document and nothing else.
		progress = stderr
	}
	r, err := runSealed(ctx, f, progress, stderr, true)
	if err != nil {
		return err
	}
	if f.output == "json" {
		fmt.Fprintf(stderr, "evidence: %s\n%s", r.dir, r.note)
		if err := writeJSON(stdout, runDocOf(*r.record, r.dir, r.signer, indexPath(f), archivePath(f, r.dir), r.results)); err != nil {
			return err
		}
		return outcome(r.results)
	}
	printSummary(stdout, r.results)
	fmt.Fprintf(stdout, "\nevidence: %s\n%s", r.dir, r.note)
	return outcome(r.results)
}

// sealedRun is a run that finished, sealed (or left unsigned) under its
// final name and recorded in the index.
type sealedRun struct {
	dir     string // the run folder, absolute
	note    string // what sealing did: archive, signed or UNSIGNED, index
	signer  sealer
	record  *evidence.Run
	results []evidence.Result
}

// runSealed is a whole run of f through the one pipeline: the request
// prepared and checked, runner.Execute, then seal (runner.Seal, archive,
// index). Progress goes to progress, with a status line under it when live
// and progress is a terminal; it prints no result and picks no exit code:
// run and compare do that with what it returns.
func runSealed(ctx context.Context, f runFlags, progress, stderr io.Writer, live bool) (*sealedRun, error) {
	p, err := prepare(ctx, f)
	if err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, usagef("run: needs root to create network namespaces and sandboxes (try sudo)")
	}
	spec := p.spec
	if spec.Target, err = newTarget(spec.TargetName, spec.Profile, spec.ProbePath); err != nil {
		return nil, err
	}
	// What runs that died (kill -9) left behind goes first, by ownership:
	// a live run's things are never touched.
	if err := sweepLeftovers(ctx, stderr); err != nil {
		fmt.Fprintf(stderr, "gatehouse: warning: %v\n", err)
	}
	// Targets that start services of their own (the docker daemon) stop
	// them here, whatever happens to the run.
	defer closeTargets(context.WithoutCancel(ctx))
	defer func() {
		if err := ledger.Lost(); err != nil {
			fmt.Fprintf(stderr, "gatehouse: warning: not everything this run made is on its ledger (%v): if it was killed, `gatehouse lab down` may not find all of it\n", err)
		}
	}()
	if f.quiet {
		progress = io.Discard
	} else if live && isTerminal(progress) {
		live := newLiveLine(progress, time.Now)
		live.tick(time.Second)
		defer live.Close()
		progress = live
	}
	spec.Progress = progress
	spec.Begin = func(rec *evidence.Run) {
		fmt.Fprintf(progress, "gatehouse %s: run %s, target %s, profile %s (policy %s)\n", rec.Harness, rec.ID, spec.TargetName, spec.Profile.Name, short(rec.PolicyDigest))
		printPlan(progress, stderr, f.quiet, spec.Plan)
		fmt.Fprintln(progress, detectionNote(spec.Detectors))
	}
	res, err := runner.Execute(ctx, *spec)
	if err != nil {
		return nil, err
	}
	if live, ok := progress.(*liveLine); ok {
		live.Close() // the status line goes before the summary
	}
	var note strings.Builder
	dir, err := seal(ctx, f, p.signer, res.Folder, &note)
	if err != nil {
		return nil, err
	}
	return &sealedRun{dir: dir, note: note.String(), signer: p.signer, record: res.Record, results: res.Results}, nil
}

func printSummary(w io.Writer, results []evidence.Result) {
	sort.SliceStable(results, func(i, j int) bool { return results[i].Gate < results[j].Gate })
	// The RESPONSE column is there only when a response was asked for:
	// most runs measure none, and the table stays as it was for them.
	responded := false
	for _, r := range results {
		responded = responded || len(r.Responses) > 0
	}
	respHead, respCell := "", func(evidence.Result) string { return "" }
	if responded {
		respHead = fmt.Sprintf("%-34s ", "RESPONSE")
		respCell = func(r evidence.Result) string {
			c := evidence.ResponseCell(r)
			if c == "" {
				c = "none"
			}
			return fmt.Sprintf("%-34s ", c)
		}
	}
	fmt.Fprintf(w, "\n%-18s %-13s %-12s %8s  %-18s %s%s\n", "GATE", "PATH", "VERDICT", "TIME", "DETECTED", respHead, "WHY")
	for _, r := range results {
		fmt.Fprintf(w, "%-18s %-13s %-12s %7.1fs  %-18s %s%s\n", r.Gate, r.Path, r.Verdict, r.DurationMS/1000, evidence.DetectionCell(r), respCell(r), evidence.Redact(r.Reason))
		for i, h := range r.Hits {
			if i == maxHitLines {
				fmt.Fprintf(w, "%65s↳ … %d more in traces/endpoint-hits.jsonl\n", "", len(r.Hits)-i)
				break
			}
			fmt.Fprintf(w, "%65s↳ %s got %s from %s (session %s): %s\n", "", h.Endpoint, h.Proto, h.Src, r.Session, redact(h.Summary))
		}
	}
}

// redact keeps canaries, tokens and terminal controls out of printed
// output, on one line of at most 92 bytes; the traces hold the values.
func redact(s string) string {
	return termsafe.Truncate(evidence.Redact(s), 92)
}

// maxHitLines bounds the hits printed per scenario; the trace has them all.
const maxHitLines = 6

func short(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 && len(d) > i+13 {
		return d[:i+13]
	}
	return d
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
