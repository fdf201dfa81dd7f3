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

	"github.com/gatehouse-dev/gatehouse/evidence/comparison"
	"github.com/gatehouse-dev/gatehouse/internal/runner"
	"github.com/gatehouse-dev/gatehouse/internal/termsafe"
	"github.com/gatehouse-dev/gatehouse/targets"
)

const compareHelp = `Usage: gatehouse compare --profile A --profile B [--profile C ...] [--run DIR ...] [--gates LIST] [--out DIR]

The side-by-side a team reads before choosing a sandbox. Runs the same gates
against each profile, one after the other, exactly as 'gatehouse run' does
(each gets its own lab and its own run folder under --out), then prints one
matrix: gate x path x profile, what got through where (the lab endpoint,
protocol and port that recorded each forbidden contact), each runtime as it
reported itself, each profile's session cold start (Target.Start until the
session is ready, median and p95 over the run's sessions) and full run time.

The matrix is written to <out>/compare-<id>.json, .txt and .html (one
self-contained page, no scripts, for a design review). With --key every run
is sealed and the matrix names each run's folder and the digest of its signed
SHA256SUMS, so each column can be checked with 'gatehouse verify'. --key is
refused when any profile puts the host within the guest's reach (as 'run
--key' is): compare without it, then 'gatehouse seal' each run folder in a
job that runs no sandbox.

--run DIR adds a run folder made earlier (by run or by another compare) as a
column without running it again; its cold start is not known then.

A column whose run could not finish, or (with --keep-going) whose profile
could not be prepared here (its tool is not installed, say), shows no
verdicts and says why: an empty cell is never a pass.

Example:
  gatehouse compare --profile targets/profiles/bwrap-hardened.yaml \
    --profile targets/profiles/docker-hardened.yaml \
    --profile targets/profiles/gvisor-hardened.yaml \
    --gates external-callback,dns-exfiltration,cloud-metadata

Exit codes: 0 every column has complete verdicts (the verdicts are in the
matrix), 3 some column could not finish, 2 usage or config.

Flags:
`

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var profs, runDirs listFlag
	var keepGoing bool
	var f runFlags
	fl := newFlagSet(ctx, "compare")
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, compareHelp); fl.PrintDefaults() }
	fl.Var(&profs, "profile", "profile YAML (repeat; with --run, at least two columns in all)")
	fl.Var(&runDirs, "run", "an existing run folder to add as a column (repeatable)")
	fl.BoolVar(&keepGoing, "keep-going", false, "a profile that cannot be prepared here becomes a column that says why, instead of exit 2")
	fl.StringVar(&f.gates, "gates", "", "comma-separated gates to run (default: every gate)")
	fl.StringVar(&f.out, "out", "gatehouse-runs", "folder that receives the run folders and the matrix")
	fl.StringVar(&f.probe, "probe", "", "static probe binary (default: as for run)")
	fl.IntVar(&f.concurrency, "concurrency", 0, "scenarios run at once; 0 = 8, or 2 with --agent (a scenario mostly waits on the sandbox and the lab, so 8 at once is fastest even on 2 cores; an agent CLI keeps a core busy)")
	fl.BoolVar(&f.quiet, "quiet", false, "print only the matrix")
	fl.StringVar(&f.key, "key", "", "cosign private key: every run is sealed as with 'run --key', and the matrix names each run's SHA256SUMS digest")
	output := outputFlag(fl)
	shortFlags(fl)
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &usageError{err}
	}
	if fl.NArg() > 0 {
		return usagef("compare: unexpected argument %q", fl.Arg(0))
	}
	if err := checkOutput("compare", *output); err != nil {
		return err
	}
	// With json, stdout carries the document alone: the runs' progress
	// goes to stderr.
	progress := stdout
	if *output == "json" {
		progress = stderr
	}
	if len(profs)+len(runDirs) < 2 {
		return usagef("compare: give at least two --profile (or --run) to compare")
	}
	// With --key every profile is checked (a profile whose guest reaches
	// the host is refused) and the key is loaded once, before any run.
	f.loaded = &sealerOnce{}
	unprepared := map[string]error{}
	for _, p := range profs {
		g := f
		g.profile = p
		if _, err := prepare(ctx, g); err != nil {
			if !keepGoing {
				return err
			}
			unprepared[p] = err
		}
	}
	cmp := &comparison.Comparison{ID: runner.NewID(), Created: time.Now().UTC(), Gates: f.gates}
	for _, p := range profs {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("compare: %w", err)
		}
		if err := unprepared[p]; err != nil {
			cmp.Profiles = append(cmp.Profiles, comparison.Column{File: p, Error: "not run: " + err.Error()})
			continue
		}
		g := f
		g.profile = p
		cmp.Profiles = append(cmp.Profiles, compareOne(ctx, g, progress, stderr))
	}
	for _, d := range runDirs {
		col := comparison.Column{}
		if err := comparison.ReadRun(&col, d); err != nil {
			return &usageError{fmt.Errorf("compare: --run: %w", err)}
		}
		cmp.Profiles = append(cmp.Profiles, col)
	}
	cmp.Build()
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	var txt, page bytes.Buffer
	cmp.WriteText(&txt)
	if *output == "text" {
		stdout.Write(txt.Bytes())
	}
	base := filepath.Join(f.out, "compare-"+cmp.ID)
	b, err := json.MarshalIndent(cmp, "", "  ")
	if err == nil {
		err = cmp.WriteHTML(&page)
	}
	if err == nil {
		// encoding/json leaves C1 and bidi controls raw in strings; escaped,
		// the file is the same JSON and safe to cat (see internal/termsafe).
		err = errors.Join(os.WriteFile(base+".json", []byte(termsafe.Lines(string(b))+"\n"), 0o644), os.WriteFile(base+".txt", txt.Bytes(), 0o644),
			os.WriteFile(base+".html", page.Bytes(), 0o644))
	}
	if err != nil {
		return fmt.Errorf("compare: write matrix: %w", err)
	}
	if *output == "json" {
		if err := writeJSON(stdout, compareDoc{Schema: "gatehouse.compare/v1", Files: []string{base + ".json", base + ".txt", base + ".html"}, Comparison: cmp}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "\nmatrix: %s.json, %s.txt, %s.html\n", base, base, base)
	}
	for _, p := range cmp.Profiles {
		if p.Error != "" {
			// Not finished: exit 3, whatever the other columns say.
			return fmt.Errorf("compare: %s has no complete verdicts: %s", p.Label(), firstLine(p.Error))
		}
	}
	return nil
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

// compareOne runs one profile through run's own pipeline (runSealed),
// timing each session start, and reads back the run folder it returns.
func compareOne(ctx context.Context, f runFlags, stdout, stderr io.Writer) comparison.Column {
	pr := comparison.Column{File: f.profile}
	starts := &startLog{}
	setStartLog(starts)
	t0 := time.Now()
	r, err := runSealed(ctx, f, stdout, stderr, false) // plain lines, as before: no status line
	runSeconds := time.Since(t0).Seconds()
	setStartLog(nil)
	if cerr := closeTargets(context.WithoutCancel(ctx)); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if err != nil {
		pr.Error = err.Error()
	}
	if r == nil {
		if pr.Error == "" {
			pr.Error = "no run folder was written"
		}
		return pr
	}
	// The run's verdicts go into the matrix, whatever they are; unless
	// quiet, its summary is printed as run prints it.
	if !f.quiet {
		printSummary(stdout, r.results)
		fmt.Fprintf(stdout, "\nevidence: %s\n%s", r.dir, r.note)
	}
	if rerr := comparison.ReadRun(&pr, r.dir); rerr != nil && pr.Error == "" {
		pr.Error = rerr.Error()
	}
	pr.File = f.profile
	pr.RunSeconds = runSeconds
	pr.ColdStart = starts.summary()
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
