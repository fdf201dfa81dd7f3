package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// runCheck is `run --check`: everything `run` checks before it starts
// anything (prepare), then the plan, and nothing is run. A profile that
// fails is exit 2 with its file, line and reason, as `run` would be.
func runCheck(ctx context.Context, f runFlags, stdout io.Writer) error {
	if f.output != "text" && f.output != "json" {
		return usagef("run: --output %q: text or json", f.output)
	}
	p, err := prepare(ctx, f)
	if err != nil {
		return err
	}
	if f.output == "json" {
		b, err := json.MarshalIndent(p.spec.Plan, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	if err := p.spec.Plan.WriteText(stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nprofile %s: OK (%d warning(s)); nothing was run\n", f.profile, len(p.spec.Plan.Warnings))
	return nil
}

// printPlan prints the plan at the start of a run. With --quiet only its
// warnings are printed (to stderr): an auditor must see them either way.
func printPlan(progress, stderr io.Writer, quiet bool, pl profile.Plan) {
	if !quiet {
		_ = pl.WriteText(progress)
		return
	}
	for _, w := range pl.Warnings {
		fmt.Fprintf(stderr, "gatehouse: WARNING %s\n", w)
	}
}
