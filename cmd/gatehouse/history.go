package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/gatehouse-dev/gatehouse/evidence/index"
)

const historyHelp = `Usage: gatehouse history [--db PATH] [--limit N]

Lists the runs recorded in the SQLite index, newest first: when, run id,
target, profile, policy digest, image, verdict summary, counts and who signed
(or UNSIGNED). The index is a cache of what bundles say; 'gatehouse verify'
and 'gatehouse gate' check the bundles themselves.

Example:
  gatehouse history --db gatehouse-runs/gatehouse-index.db --limit 10

Flags:
`

func runHistory(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := newFlagSet(ctx, "history")
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, historyHelp); fl.PrintDefaults() }
	db := fl.String("db", index.DefaultPath("gatehouse-runs"), "SQLite index of recorded runs")
	limit := fl.Int("limit", 50, "show at most N runs (0: all)")
	output := outputFlag(fl)
	pos, err := parseArgs(fl, args)
	if err != nil {
		return err
	}
	if err := checkOutput("history", *output); err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("history: unexpected argument %q", pos[0])
	}
	ix, err := openIndex(ctx, *db)
	if errors.Is(err, errNoIndex) {
		return fmt.Errorf("history: %w (runs record into <out>/%s; use --db)", err, index.DefaultName)
	}
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer ix.Close()
	runs, err := ix.History(ctx, *limit)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if *output == "json" {
		return writeJSON(stdout, historyRows(*db, runs))
	}
	fmt.Fprintf(stdout, "%-20s %-24s %-8s %-18s %-21s %-8s %-7s %-23s %s\n",
		"ENDED", "RUN", "TARGET", "PROFILE", "POLICY", "RESULT", "P/F/O", "SIGNED BY", "DIR")
	for _, r := range runs {
		signer := "UNSIGNED"
		if r.KeyFingerprint != "" {
			signer = short(r.KeyFingerprint)
		}
		fmt.Fprintf(stdout, "%-20s %-24s %-8s %-18s %-21s %-8s %-7s %-23s %s\n",
			r.Ended.Format("2006-01-02T15:04:05Z"), r.ID, r.Target, r.Profile, short(r.PolicyDigest), r.Verdict,
			fmt.Sprintf("%d/%d/%d", r.Passed, r.Failed, r.Other), signer, r.Dir)
		if r.ImageDigest != "" {
			fmt.Fprintf(stdout, "%-20s image %s\n", "", r.ImageDigest)
		}
	}
	fmt.Fprintf(stdout, "%d run(s) in %s\n", len(runs), *db)
	return nil
}

// openIndex opens the index db for a verb that reads recorded runs (gate,
// merge, history). A file that is not there is errNoIndex, "no index at
// db": no evidence was recorded there, a refusal in each of them (exit 1,
// as docs/evidence.md says for gate). One that cannot be opened is a usage
// error: --db names something that is not an index.
func openIndex(ctx context.Context, db string) (*index.Index, error) {
	if _, err := os.Stat(db); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w at %s", errNoIndex, db)
	}
	ix, err := index.Open(ctx, db)
	if err != nil {
		return nil, &usageError{err}
	}
	return ix, nil
}
