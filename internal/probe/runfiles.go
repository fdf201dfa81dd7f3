package probe

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// runFiles is `probe run --plan FILE --out FILE`: the form an agent runs
// through its shell tool, when the harness cannot hand it stdin and cannot
// read its stdout (the agent's tool layer sits between them). The reports
// go to stdout as usual and are also written to the --out file, which the
// harness reads afterwards with `probe show` (still hostile input). A
// second run (an agent that retries) replaces the first's reports.
func runFiles(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("probe run", flag.ContinueOnError)
	fl.SetOutput(stderr)
	planFile := fl.String("plan", "", "read the plan from this file instead of stdin")
	outFile := fl.String("out", "", "also write the reports to this file (replacing it)")
	if err := fl.Parse(args); err != nil || fl.NArg() > 0 {
		return ExitBadPlan
	}
	in := stdin
	if *planFile != "" {
		f, err := os.Open(*planFile)
		if err != nil {
			fmt.Fprintln(stderr, "probe:", err)
			return ExitBadPlan
		}
		defer f.Close()
		in = f
	}
	plan, err := wire.ReadPlan(in)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return ExitBadPlan
	}
	w := stdout
	if *outFile != "" {
		f, err := os.OpenFile(*outFile, os.O_WRONLY|os.O_TRUNC|os.O_CREATE, 0o644)
		if err != nil {
			fmt.Fprintln(stderr, "probe:", err)
			return ExitFailed
		}
		defer f.Close()
		w = io.MultiWriter(stdout, f)
	}
	if err := Run(ctx, plan, w); err != nil {
		fmt.Fprintln(stderr, err)
		return ExitFailed
	}
	return ExitOK
}

// show prints a reports file the way `probe run` printed it, capped: the
// harness reads what an agent's run of the probe left behind.
func show(file string, stdout, stderr io.Writer) int {
	f, err := os.Open(file)
	if err != nil {
		fmt.Fprintln(stderr, "probe:", err)
		return ExitFailed
	}
	defer f.Close()
	if _, err := io.Copy(stdout, io.LimitReader(f, int64(wire.DefaultLimits().MaxBytes)+1)); err != nil {
		fmt.Fprintln(stderr, "probe:", err)
		return ExitFailed
	}
	return ExitOK
}
