package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gatehouse-dev/gatehouse/internal/doctor"
)

const doctorHelp = `Usage: gatehouse doctor [--output text|json]

Checks what a run needs on this machine, one line per check: root, user and
network namespaces, cgroup v2, bubblewrap, nftables, iproute2, nsenter,
dockerd and runc (the docker target; Gatehouse starts its own daemon in the
lab, none needs to be running), runsc at its pinned version (gvisor),
firejail, cosign (bundle interop only), the builtin monitor's kernel
features (BTF, and the monitor really loaded and closed), audit, and each
pinned agent and wrapper tool. Each line says ok, missing, wrong-version or
unavailable, what was found, and for anything not ok exactly what to install
or run ('make tools', 'apt-get install bubblewrap', ...). NEEDED BY says
which runs need it: "run" is every run.

--output json prints {"schema": "gatehouse.doctor/v1", "bwrap_ready": bool,
"checks": [{"name", "status", "found", "fix", "needed_by": [...]}]}
(docs/ci.md).

Example:
  gatehouse doctor
  gatehouse doctor --output json | jq '.checks[] | select(.status != "ok")'

Exit codes: 0 a bwrap run can work here (every check it needs is ok; other
targets and features may still be missing: read the lines), 1 it cannot,
2 usage.

Flags:
`

func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return doctorWith(ctx, args, doctor.System(), stdout, stderr)
}

// doctorWith is runDoctor over the given probes (fakes in tests).
func doctorWith(ctx context.Context, args []string, p doctor.Probes, stdout, stderr io.Writer) error {
	fl := newFlagSet(ctx, "doctor")
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, doctorHelp); fl.PrintDefaults() }
	output := fl.String("output", "text", "text or json (schema gatehouse.doctor/v1, docs/ci.md)")
	shortFlags(fl)
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &usageError{err}
	}
	if fl.NArg() > 0 {
		return usagef("doctor: unexpected argument %q", fl.Arg(0))
	}
	if *output != "text" && *output != "json" {
		return usagef("doctor: --output %q: say text or json", *output)
	}
	r := doctor.Run(ctx, p)
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "STATUS\tCHECK\tNEEDED BY\tFOUND / FIX")
		for _, c := range r.Checks {
			what := c.Found
			if c.Fix != "" {
				what = strings.TrimPrefix(what+" — "+c.Fix, " — ")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Status, c.Name, strings.Join(c.NeededBy, ","), what)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if !r.BwrapReady {
		return refusedf("doctor: a bwrap run cannot work on this machine: fix the lines above needed by run or bwrap")
	}
	if *output == "text" {
		fmt.Fprintln(stdout, "\nbwrap runs: ready")
	}
	return nil
}
