package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"gatehouse/evidence"
	"gatehouse/targets"
)

const compareHelp = `Usage: gatehouse compare --profile A --profile B [--profile C ...] [--gates LIST] [--out DIR]

Runs the same gates against each profile, one after the other, exactly as
'gatehouse run' does (each gets its own lab and its own run folder under
--out), then prints one matrix: gate x path x profile, with each profile's
cold start (Target.Start until the session is ready, median and p95 over
the run's sessions) and full run time. The matrix is written to
<out>/compare-<id>.json and .txt. With --key every run is sealed and the
matrix names each run's folder and the digest of its signed SHA256SUMS, so
each row can be checked with 'gatehouse verify'.

Example:
  gatehouse compare --profile targets/profiles/bwrap-hardened.yaml \
    --profile targets/profiles/docker-hardened.yaml \
    --profile targets/profiles/gvisor-hardened.yaml \
    --gates external-callback,dns-exfiltration,cloud-metadata

Exit codes: 0 every run finished (the verdicts are in the matrix), 3 some
run could not finish, 2 usage or config.

Flags:
`

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var profs listFlag
	var f runFlags
	fl := flag.NewFlagSet("compare", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, compareHelp); fl.PrintDefaults() }
	fl.Var(&profs, "profile", "profile YAML (repeat: at least two)")
	fl.StringVar(&f.gates, "gates", "", "comma-separated gates to run (default: every gate)")
	fl.StringVar(&f.out, "out", "gatehouse-runs", "folder that receives the run folders and the matrix")
	fl.StringVar(&f.probe, "probe", "", "static probe binary (default: as for run)")
	fl.IntVar(&f.concurrency, "concurrency", 2, "scenarios run at once")
	fl.BoolVar(&f.quiet, "quiet", false, "print only the matrix")
	fl.StringVar(&f.key, "key", "", "cosign private key: every run is sealed as with 'run --key', and the matrix names each run's SHA256SUMS digest")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &usageError{err}
	}
	if fl.NArg() > 0 {
		return usagef("compare: unexpected argument %q", fl.Arg(0))
	}
	if len(profs) < 2 {
		return usagef("compare: give at least two --profile")
	}
	for _, p := range profs {
		g := f
		g.profile = p
		if _, err := prepare(ctx, g); err != nil {
			return err
		}
	}
	cmp := &comparison{ID: newRunID(), Gates: f.gates}
	for _, p := range profs {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("compare: %w", err)
		}
		g := f
		g.profile = p
		cmp.Profiles = append(cmp.Profiles, compareOne(ctx, g, stdout, stderr))
	}
	cmp.build()
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	var txt bytes.Buffer
	cmp.print(&txt)
	stdout.Write(txt.Bytes())
	base := filepath.Join(f.out, "compare-"+cmp.ID)
	b, err := json.MarshalIndent(cmp, "", "  ")
	if err == nil {
		err = errors.Join(os.WriteFile(base+".json", append(b, '\n'), 0o644), os.WriteFile(base+".txt", txt.Bytes(), 0o644))
	}
	if err != nil {
		return fmt.Errorf("compare: write matrix: %w", err)
	}
	fmt.Fprintf(stdout, "\nmatrix: %s.json, %s.txt\n", base, base)
	for _, p := range cmp.Profiles {
		if p.Error != "" {
			return &exitError{code: exitInconclusive, msg: fmt.Sprintf("compare: the run of %s did not finish: %s", p.File, p.Error)}
		}
	}
	return nil
}

// compareOne runs one profile through run's own execute, timing each
// session start, and reads back the run folder it wrote.
func compareOne(ctx context.Context, f runFlags, stdout, stderr io.Writer) profileRun {
	pr := profileRun{File: f.profile}
	var out bytes.Buffer
	var w io.Writer = &out
	if !f.quiet {
		w = io.MultiWriter(&out, stdout)
	}
	starts := &startLog{}
	setStartLog(starts)
	t0 := time.Now()
	err := execute(ctx, f, w, stderr)
	pr.RunSeconds = time.Since(t0).Seconds()
	setStartLog(nil)
	if cerr := closeTargets(context.WithoutCancel(ctx)); cerr != nil {
		err = errors.Join(err, cerr)
	}
	pr.ColdStart = starts.summary()
	var ee *exitError
	if err != nil && !(errors.As(err, &ee) && (ee.code == exitViolation || ee.code == exitInconclusive) && strings.Contains(out.String(), "\nevidence: ")) {
		pr.Error = err.Error()
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if d, ok := strings.CutPrefix(line, "evidence: "); ok {
			pr.RunDir = strings.TrimSpace(d)
		}
	}
	if pr.RunDir == "" {
		if pr.Error == "" {
			pr.Error = "no run folder was written"
		}
		return pr
	}
	var rec evidence.Run
	if b, rerr := os.ReadFile(filepath.Join(pr.RunDir, "run.json")); rerr == nil && json.Unmarshal(b, &rec) == nil {
		pr.Profile, pr.Target, pr.RunID = rec.Profile, rec.Target, rec.ID
	}
	if b, rerr := os.ReadFile(filepath.Join(pr.RunDir, "results.json")); rerr == nil {
		_ = json.Unmarshal(b, &pr.results)
	}
	if b, rerr := os.ReadFile(filepath.Join(pr.RunDir, "SHA256SUMS")); rerr == nil {
		pr.Sealed = evidence.SHA256(b)
	}
	return pr
}

// startLog records how long each Target.Start took during one run.
type startLog struct {
	mu sync.Mutex
	ds []time.Duration
}

var currentStarts struct {
	mu  sync.Mutex
	log *startLog
}

func setStartLog(l *startLog) {
	currentStarts.mu.Lock()
	currentStarts.log = l
	currentStarts.mu.Unlock()
}

// timed wraps t so its starts are logged, when compare is listening.
func timed(t targets.Target) targets.Target {
	currentStarts.mu.Lock()
	l := currentStarts.log
	currentStarts.mu.Unlock()
	if l == nil {
		return t
	}
	return &timedTarget{Target: t, log: l}
}

type timedTarget struct {
	targets.Target
	log *startLog
}

func (t *timedTarget) Start(ctx context.Context, spec targets.Spec) (targets.Session, error) {
	t0 := time.Now()
	s, err := t.Target.Start(ctx, spec)
	if err == nil {
		t.log.mu.Lock()
		t.log.ds = append(t.log.ds, time.Since(t0))
		t.log.mu.Unlock()
	}
	return s, err
}
