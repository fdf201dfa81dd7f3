// Command gatehouse runs sandbox acceptance gates and records signed evidence.
//
// main only calls run; every verb is a function in its own file taking
// (ctx, args, stdout, stderr) and returning an error. Errors are mapped to
// exit codes in exitcodes.go and nowhere else.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/gatehouse-dev/gatehouse/internal/ledger"
	"github.com/gatehouse-dev/gatehouse/internal/targets/docker"
)

type verb struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// verbs is the explicit registry; order is the order of `gatehouse help`.
func verbs() []verb {
	return []verb{
		{"run", "run the gates against a target and write a run folder", runRun},
		{"agents", "list or install the agent CLIs the normal path can drive (agents install NAME)", runAgents},
		{"lab", "bring the lab of controlled endpoints up or down, or show it", runLab},
		{"compare", "run the same gates against several profiles and print one matrix", runCompare},
		{"intake", "hold a results-intake service to the intake contract (intake gate)", runIntake},
		{"rehearse", "the report-triage rehearsal: a planted report, a disposable repository copy, the denial and the result (rehearse triage)", runRehearse},
		{docker.ShimVerb, "(internal) the OCI runtime shim Gatehouse's lab Docker daemon runs", runShim},
		{"keys", "make a cosign-format key pair (keys generate)", runKeys},
		{"seal", "sign run folders a run left unsigned, in a job that runs no sandbox", runSeal},
		{"verify", "verify a signed evidence bundle offline and say what it proves", runVerify},
		{"push", "store a sealed evidence bundle as an OCI artifact in an OCI image layout on disk", runPush},
		{"gate", "allow a release only on fresh, signed, passing evidence for its policy", runGate},
		{"merge", "write one signed report over the shards of a run group", runMerge},
		{"diff", "show what changed between two runs, gate by gate", runDiff},
		{"history", "list the runs recorded in the index", runHistory},
		{"doctor", "check what a run needs on this machine and say what to install", runDoctor},
		{"version", "print the harness version", runVersion},
		{"help", "show the commands, or a command's help (help COMMAND [SUB])", runHelpVerb},
		{"completion", "print a shell completion script (completion bash|zsh|fish)", runCompletion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	ledger.Close()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == docker.ShimVerb {
		// The shim speaks to the Docker daemon, not to a person.
		return runVerb(ctx, args, stdout, stderr)
	}
	out, errw := screen(stdout), screen(stderr)
	defer errw.Flush()
	defer out.Flush()
	return runVerb(ctx, args, out, errw)
}

func runVerb(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return report(dispatch(ctx, args, stdout, stderr), stderr)
}

// dispatch runs the verb args name; its error says what happened
// (exitcodes.go turns that into the exit code).
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		if len(args) == 0 {
			return usagef("say a command (the list is above)")
		}
		return flag.ErrHelp
	}
	for _, v := range verbs() {
		if v.name == args[0] {
			return v.run(ctx, args[1:], stdout, stderr)
		}
	}
	return usagef("unknown command %q; run 'gatehouse help' for the list", args[0])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "gatehouse — acceptance tests and signed evidence for AI agent sandboxes")
	fmt.Fprintln(w, "\nUsage: gatehouse COMMAND [flags]   (gatehouse COMMAND --help for details)")
	fmt.Fprintln(w, "\nCommands:")
	for _, v := range verbs() {
		if strings.HasPrefix(v.summary, "(internal)") {
			continue
		}
		fmt.Fprintf(w, "  %-10s %s\n", v.name, v.summary)
	}
	fmt.Fprintln(w, "\nFlags: -flag and --flag are the same; -o is --output, -p --profile and -k --key wherever a command has them.")
	fmt.Fprintln(w, "Shell completion: source <(gatehouse completion bash)   (or zsh, fish)")
	fmt.Fprintln(w, "\nExit codes: 0 pass, 1 violation (or evidence refused), 2 usage/config, 3 inconclusive or the run could not finish.")
}
