package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
	"github.com/gatehouse-dev/gatehouse/evidence/diff"
	"github.com/gatehouse-dev/gatehouse/internal/scratch"
)

const diffHelp = `Usage: gatehouse diff A B [--key cosign.pub]

Shows what changed between two runs (run folders or .tar.gz bundles), gate by
gate: each scenario's verdict and time on each path, then the effective
configuration read back from the sandbox (runtime, capabilities, identity,
mounts, network rules, command line) and the policy files, as go-cmp diffs
("-" is A, "+" is B). Per-run noise (namespace inodes, session folders,
canaries) is left out. With --key both are verified first; without it the
files are read as they are.

Example:
  gatehouse diff gatehouse-runs/RUN-BEFORE gatehouse-runs/RUN-AFTER --key cosign.pub

Exit codes: 0 no scenario regressed, 1 a scenario that PASSed in A does not
PASS in B (or a bundle does not verify), 2 usage.

Flags:
`

func runDiff(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := newFlagSet(ctx, "diff")
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, diffHelp); fl.PrintDefaults() }
	var vf verifyFlags
	fl.StringVar(&vf.key, "key", "", "verify both bundles with this cosign public key first")
	output := outputFlag(fl)
	pos, err := parseArgs(fl, args)
	if err != nil {
		return err
	}
	if err := checkOutput("diff", *output); err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("diff: want two runs A and B (folders or .tar.gz), got %d", len(pos))
	}
	var sides [2]diff.Side
	var notes [2]string
	for i, p := range pos {
		if vf.key != "" {
			v, err := loadVerifier(vf)
			if err != nil {
				return err
			}
			if _, err := verifyBundle(ctx, p, v); err != nil {
				return refusedf("diff: %s: NOT VERIFIED: %s", p, explain(err))
			}
			notes[i] = "verified"
		} else {
			notes[i] = "not verified"
		}
		if sides[i], err = loadSide(ctx, p); err != nil {
			return &usageError{err}
		}
	}
	r := diff.Compare(sides[0], sides[1])
	regressed := func() error {
		if r.Regressed() {
			return refusedf("diff: REGRESSION: a scenario that PASSed in A does not PASS in B")
		}
		return nil
	}
	if *output == "json" {
		if err := writeJSON(stdout, diffReport(pos, sides, [2]bool{notes[0] == "verified", notes[1] == "verified"}, r)); err != nil {
			return err
		}
		return regressed()
	}
	for i, s := range sides {
		fmt.Fprintf(stdout, "%c: %s  run %s, %s, policy %s (%s)\n", 'A'+i, pos[i], evidence.Redact(s.Run.ID), evidence.Redact(s.Run.Profile), evidence.Redact(short(s.Run.PolicyDigest)), notes[i])
	}
	printGates(stdout, r)
	printChanges(stdout, r)
	return regressed()
}

// loadSide reads a folder, or extracts an archive into a temporary folder
// that is removed once read.
func loadSide(ctx context.Context, path string) (diff.Side, error) {
	if !strings.HasSuffix(path, ".tar.gz") && !strings.HasSuffix(path, ".tgz") {
		return diff.Load(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return diff.Side{}, fmt.Errorf("diff: %w", err)
	}
	defer f.Close()
	tmp, release, err := scratch.New("diff")
	if err != nil {
		return diff.Side{}, fmt.Errorf("diff: %w", err)
	}
	defer release()
	dir, err := bundle.Extract(ctx, f, tmp, bundle.DefaultLimits)
	if err != nil {
		return diff.Side{}, fmt.Errorf("diff: %s: %w", path, err)
	}
	s, err := diff.Load(dir)
	s.Dir = path
	return s, err
}

func printGates(w io.Writer, r diff.Report) {
	fmt.Fprintf(w, "\nVerdicts, gate by gate\n  %-20s %-13s %-29s %s\n", "GATE", "PATH", "VERDICT A -> B", "TIME A -> B")
	for _, g := range r.Gates {
		mark := " "
		switch {
		case g.Regressed():
			mark = "!"
		case g.Changed():
			mark = "*"
		}
		fmt.Fprintf(w, "%s %-20s %-13s %-29s %s\n", mark, evidence.Redact(g.Gate), evidence.Redact(g.Path),
			fmt.Sprintf("%s -> %s", orNone(string(g.A), "absent"), orNone(string(g.B), "absent")),
			fmt.Sprintf("%.1fs -> %.1fs (%+.1fs)", g.AMS/1000, g.BMS/1000, (g.BMS-g.AMS)/1000))
		if g.Changed() && g.B != "" {
			fmt.Fprintf(w, "  %34s B: %s\n", "", redact(g.BReason))
		}
	}
	fmt.Fprintln(w, "  (! regressed: PASS in A, not in B; * changed)")
}

func printChanges(w io.Writer, r diff.Report) {
	fmt.Fprintln(w, "\nConfiguration and policy (- A, + B)")
	if len(r.Changes) == 0 {
		fmt.Fprintln(w, "  no difference in what was tested, the effective configuration or the policy files")
	}
	for _, c := range r.Changes {
		fmt.Fprintf(w, "  [%s] %s\n", c.Section, evidence.Redact(c.Key))
		for _, l := range strings.Split(strings.TrimRight(c.Diff, "\n"), "\n") {
			if l != "" {
				// Evidence quotes sandboxes: no terminal control, bidi
				// control or value the harness made reaches the screen.
				fmt.Fprintf(w, "      %s\n", evidence.Redact(l))
			}
		}
	}
}
