// Package probe is the attempt runner that is copied into a sandbox: it
// reads a wire.Plan on stdin, makes each attempt, and writes one
// wire.Report per attempt on stdout as a JSON line. The format between it
// and the harness is package wire; only the probe binary
// (cmd/gatehouse-probe) imports this package, so the harness never links
// the attempts (internal/archtest guards that).
package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// Exit codes of the probe binary.
const (
	ExitOK      = 0 // the plan ran (whatever the outcomes), or facts were printed
	ExitFailed  = 1 // output could not be written
	ExitBadPlan = 2 // bad plan or usage
)

// Main is the probe binary: `probe run` reads a Plan on stdin and streams
// Reports; `probe facts` prints one Facts object; `probe hold` keeps a
// process alive (see Hold).
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "hold" {
		return Hold(ctx, args[1:], stdin, stdout, stderr)
	}
	if len(args) > 1 && args[0] == "run" {
		return runFiles(ctx, args[1:], stdin, stdout, stderr)
	}
	if len(args) == 2 && args[0] == "show" {
		return show(args[1], stdout, stderr)
	}
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: probe run [--plan FILE] [--out FILE] < plan.json | probe show FILE | probe facts | probe hold VALUE [DIR]")
		return ExitBadPlan
	}
	switch args[0] {
	case "run":
		plan, control, err := wire.ReadPlanStream(stdin)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return ExitBadPlan
		}
		if err := RunControlled(ctx, plan, stdout, control, stderr); err != nil {
			fmt.Fprintln(stderr, err)
			return ExitFailed
		}
		return ExitOK
	case "facts":
		if err := json.NewEncoder(stdout).Encode(ReadFacts()); err != nil {
			fmt.Fprintln(stderr, "probe: write facts:", err)
			return ExitFailed
		}
		return ExitOK
	}
	fmt.Fprintf(stderr, "probe: unknown mode %q\n", args[0])
	return ExitBadPlan
}
