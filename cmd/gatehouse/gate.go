package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/gatehouse-dev/gatehouse/features"
	"github.com/gatehouse-dev/gatehouse/internal/steps"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
	"github.com/gatehouse-dev/gatehouse/evidence/gate"
	"github.com/gatehouse-dev/gatehouse/evidence/index"
	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
)

const gateHelp = `Usage: gatehouse gate (--key cosign.pub | --certificate-identity ID
                       --certificate-oidc-issuer URL --trusted-root FILE)
                     --policy FILE [--image DIGEST] [--require GATES]
                     [--max-age DURATION] [--db PATH]
                     [--require-detection GATES [--max-detection-latency DURATION]]

Decides whether a release may go out. It passes (exit 0) only if the index
holds evidence for exactly this policy (the profile FILE and every file it
references, by digest) and image, and, for every required gate (default:
every built-in gate, so a run of only some gates is not enough) on both the
normal and the assume-breach path, the NEWEST such run that has that gate
and path (one run, or the shards of a run group: 'run --shard'):
  - PASSed it, with a working positive control,
  - is younger than --max-age,
  - and its bundle verifies with --key (or, keyless, as the certificate
    identity and issuer against the trusted root, as in 'verify') right now
    (the index is only a cache: the decision is taken again from the signed
    files of every deciding run).
A gate and path no run has is refused by name (a shard that never ran).
With --require-detection GATES it also requires, for those gates on both
paths, that the run measured detection (--monitor or --alerts) and that every
attempt a monitor could observe was detected, each no later than
--max-detection-latency after it started when that is given (an alert
imported after the fact has no latency and cannot meet a bound). Attempts no
monitor could observe (no observable object, a gVisor session) are not
misses, but a gate with none observable has shown no detection: refused.
An older pass never outvotes a newer failure of the same gate and path. --image is required whenever
the evidence names an image. Unsigned runs never pass.

Example:
  gatehouse gate --key cosign.pub --policy targets/profiles/bwrap-hardened.yaml --max-age 7d
  gatehouse gate --key cosign.pub --policy team.yaml --require-detection external-callback,dns-exfiltration --max-detection-latency 2s

Exit codes: 0 release allowed, 1 refused (the message says which gate, which
configuration mismatch or which missing evidence), 2 usage.

Flags:
`

func runGate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := newFlagSet(ctx, "gate")
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, gateHelp); fl.PrintDefaults() }
	var vf verifyFlags
	vf.register(fl, "cosign public key the evidence must be signed with (or the keyless flags)")
	policy := fl.String("policy", "", "profile file whose policy the release uses (required)")
	image := fl.String("image", "", "sandbox image digest (sha256:...) the release uses")
	require := fl.String("require", "", "comma-separated gates that must pass (default: every built-in gate)")
	maxAge := fl.String("max-age", "", "refuse evidence older than this (e.g. 72h, 7d; default: no limit)")
	db := fl.String("db", index.DefaultPath("gatehouse-runs"), "SQLite index of recorded runs")
	maxStop := fl.Duration("max-stop", steps.DefaultMaxStop, "refuse a stop-signal pass judged against a stop limit longer than this (0: no bound)")
	requireDetection := fl.String("require-detection", "", "comma-separated gates whose every observable attempt must have been detected")
	maxDetection := fl.Duration("max-detection-latency", 0, "with --require-detection: refuse a detection later than this after its attempt started (0: no bound)")
	output := outputFlag(fl)
	pos, err := parseArgs(fl, args)
	if err != nil {
		return err
	}
	if err := checkOutput("gate", *output); err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("gate: unexpected argument %q", pos[0])
	}
	if *policy == "" {
		return usagef("gate: --policy FILE is required (the profile the release uses)")
	}
	prof, err := kinds.Load(*policy)
	if err != nil {
		return &usageError{fmt.Errorf("gate: --policy: %w", err)}
	}
	reqDetection, maxDetectionLatency, err := detectionRequest(*requireDetection, *maxDetection)
	if err != nil {
		return err
	}
	v, err := loadVerifierFor("gate", vf)
	if err != nil {
		return err
	}
	req := gate.Request{PolicyDigest: prof.Digest(), ImageDigest: *image, Now: time.Now().UTC(), MaxStop: *maxStop,
		RequireDetection: reqDetection, MaxDetectionLatency: maxDetectionLatency}
	if req.MaxAge, err = parseAge(*maxAge); err != nil {
		return err
	}
	for _, g := range strings.Split(*require, ",") {
		if g = strings.TrimSpace(g); g != "" {
			req.Require = append(req.Require, g)
		}
	}
	if len(req.Require) == 0 {
		// A release needs every gate, not just the ones a run chose to run.
		if req.Require, err = features.Gates(features.FS); err != nil {
			return err
		}
	}
	rows, err := candidates(ctx, *db, req.PolicyDigest)
	if err != nil {
		return err
	}
	d := gate.Decide(req, rows)
	if d.Pass {
		d = gate.ConfirmAll(req, d, func(run index.Run) (*bundle.Verified, error) {
			ver, verr := verifyBundle(ctx, run.Dir, v)
			if verr != nil {
				verr = errors.New(explain(verr))
			}
			return ver, verr
		})
	}
	refused := func() error {
		return refusedf("gate: release refused (%d reason(s), first: %s)", len(d.Refusals), d.Refusals[0].Code)
	}
	if *output == "json" {
		if err := writeJSON(stdout, decisionDoc(req, *policy, d, v.Identity())); err != nil {
			return err
		}
		if d.Pass {
			return nil
		}
		return refused()
	}
	fmt.Fprintf(stdout, "policy %s (%s)", req.PolicyDigest, *policy)
	if req.ImageDigest != "" {
		fmt.Fprintf(stdout, ", image %s", req.ImageDigest)
	}
	fmt.Fprintln(stdout)
	if d.Pass && len(d.Runs) > 1 {
		fmt.Fprintf(stdout, "PASS: release allowed by %d runs, signed by %s:\n", len(d.Runs), v.Identity())
		for _, r := range d.Runs {
			fmt.Fprintf(stdout, "  run %s (%s)%s, ended %s, decides %s\n", r.ID, r.Dir, shardNote(r),
				r.Ended.Format(time.RFC3339), strings.Join(decides(d, r.ID), ", "))
		}
		return nil
	}
	if d.Pass {
		fmt.Fprintf(stdout, "PASS: release allowed by run %s (%s), ended %s, signed by %s\n",
			d.Run.ID, d.Run.Dir, d.Run.Ended.Format(time.RFC3339), v.Identity())
		return nil
	}
	for _, r := range d.Refusals {
		fmt.Fprintf(stdout, "REFUSED [%s] %s\n", r.Code, r.Message)
	}
	return refused()
}

// shardNote names a run's group and shard, when it has them.
func shardNote(r index.Run) string {
	switch {
	case r.Shard != "":
		return fmt.Sprintf(" shard %s of group %s", r.Shard, r.Group)
	case r.Group != "":
		return " of group " + r.Group
	}
	return ""
}

// decides lists the "gate/path" a run decided.
func decides(d gate.Decision, id string) []string {
	var out []string
	for _, x := range d.Decided {
		if x.RunID == id {
			out = append(out, x.Gate+"/"+x.Path)
		}
	}
	return out
}

// candidates reads the index. When nothing matches the policy it also
// returns the newest run of any policy, so the refusal can name it.
func candidates(ctx context.Context, db, policy string) ([]index.Run, error) {
	ix, err := openIndex(ctx, db)
	if errors.Is(err, errNoIndex) {
		return nil, fmt.Errorf("gate: release refused: %w, so no evidence at all (record runs with 'gatehouse run', or point --db at the index)", err)
	}
	if err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	defer ix.Close()
	rows, err := ix.Candidates(ctx, policy)
	if err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	if len(rows) == 0 {
		return ix.History(ctx, 1)
	}
	return rows, nil
}

// parseAge accepts Go durations and whole days ("7d").
func parseAge(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return 0, usagef("gate: --max-age %q: want e.g. 7d or 72h", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, usagef("gate: --max-age %q: want e.g. 7d or 72h", s)
	}
	return d, nil
}
