package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/ocistore"
	"github.com/gatehouse-dev/gatehouse/internal/runner"
)

// Exit codes, shared by every verb. A verb never picks one: it returns an
// error that says what happened, and exitCode maps it through exitTable.
// README.md ("Exit codes"), docs/ci.md and `gatehouse help` list them.
const (
	exitOK           = 0 // all selected gates passed / verification succeeded
	exitViolation    = 1 // a gate FAILed, or evidence did not verify / gate refused
	exitUsage        = 2 // usage or configuration error
	exitInconclusive = 3 // some gate INCONCLUSIVE (and none FAILed), or the run could not finish
)

// usageError is a mistake in the command line or a configuration file, or
// something this machine lacks that the verb needs before it starts (root,
// a tool, an installed agent): exit 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return &usageError{fmt.Errorf(format, a...)} }

// refusedError is a verb that ran and says no: evidence that does not
// verify, a release refused, a regression, a folder not sealed or pushed,
// a machine that cannot run the gates (doctor): exit 1.
type refusedError struct{ err error }

func (e *refusedError) Error() string { return e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

func refusedf(format string, a ...any) error { return &refusedError{fmt.Errorf(format, a...)} }

// errNoIndex is an index file that is not there: no evidence was recorded
// where the verb looked. gate, merge and history wrap it ("no index at
// PATH"); it is a refusal (exit 1), as docs/evidence.md says for gate.
var errNoIndex = errors.New("no index")

// outcomeError is a finished run (or rehearsal, or intake check) whose
// final verdicts are not all PASS. verdict is the one that decides: Fail
// when any scenario FAILed, else Inconclusive (also when none ran).
type outcomeError struct {
	verdict evidence.Verdict
	n       int // scenarios with that verdict
}

func (e *outcomeError) Error() string {
	if e.verdict == evidence.Fail {
		return fmt.Sprintf("%d scenario(s) FAILED: the sandbox let a forbidden effect happen", e.n)
	}
	return fmt.Sprintf("%d scenario(s) INCONCLUSIVE: nothing was proven either way for them", e.n)
}

// outcome is the run's decision from its final verdicts: nil when every
// scenario passed (or was skipped), else an *outcomeError.
func outcome(results []evidence.Result) error {
	n := map[evidence.Verdict]int{}
	for _, r := range results {
		n[r.Verdict]++
	}
	switch {
	case n[evidence.Fail] > 0:
		return &outcomeError{evidence.Fail, n[evidence.Fail]}
	case n[evidence.Inconclusive] > 0 || len(results) == 0:
		return &outcomeError{evidence.Inconclusive, n[evidence.Inconclusive]}
	}
	return nil
}

// runtimeExit carries the exit code of the hidden OCI runtime shim verb:
// the Docker daemon reads it by the OCI runtime's rules, not ours.
type runtimeExit struct{ code int }

func (e *runtimeExit) Error() string { return "" }

// exitRule is one row of exitTable.
type exitRule struct {
	code  int
	why   string
	match func(error) bool
	note  string // printed after the error, when this row decides
}

// exitTable maps what a verb returned to its exit code; the first row that
// matches decides. The verbs' own conditions come first, so a verb that
// says "refused" or "usage" is never overruled by a library error deep in
// the chain; then the libraries' typed errors that mean the same in every
// verb. Anything else is a verb that could not finish: exit 3.
var exitTable = []exitRule{
	{code: exitOK, why: "help was asked for and printed", match: errIs(flag.ErrHelp)},
	{code: exitUsage, why: "usage or configuration", match: errAs[*usageError]},
	{code: exitViolation, why: "refused: not verified, release refused, regression, folder refused, machine not ready", match: errAs[*refusedError]},
	{code: exitViolation, why: "a gate FAILed", match: outcomeIs(evidence.Fail)},
	{code: exitInconclusive, why: "a gate INCONCLUSIVE and none FAILed, or no scenario ran", match: outcomeIs(evidence.Inconclusive)},
	{code: exitUsage, why: "no target from this profile on this machine (runner.ConfigError)", match: errAs[*runner.ConfigError]},
	{code: exitUsage, why: "a malformed OCI layout reference (ocistore.ErrRef)", match: errIs(ocistore.ErrRef)},
	{code: exitViolation, why: "no index: no evidence recorded there", match: errIs(errNoIndex)},
	{code: exitViolation, why: "not a finished, unsigned run folder (runner.ErrNotSealable)", match: errIs(runner.ErrNotSealable)},
	{code: exitInconclusive, why: "interrupted", match: errIs(context.Canceled),
		note: "gatehouse: interrupted; nothing was left behind and no run was recorded as complete"},
}

// exitCode is the exit code for err (nil: exitOK).
func exitCode(err error) int {
	code, _ := classify(err)
	return code
}

// classify is exitCode with the row that decided (nil: no row, or no error).
func classify(err error) (int, *exitRule) {
	if err == nil {
		return exitOK, nil
	}
	var re *runtimeExit
	if errors.As(err, &re) {
		return re.code, nil
	}
	for i := range exitTable {
		if exitTable[i].match(err) {
			return exitTable[i].code, &exitTable[i]
		}
	}
	return exitInconclusive, nil
}

// report prints err for a person and returns the exit code.
func report(err error, stderr io.Writer) int {
	code, rule := classify(err)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return code
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintln(stderr, "gatehouse:", msg)
	}
	if rule != nil && rule.note != "" {
		fmt.Fprintln(stderr, rule.note)
	}
	return code
}

func errIs(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

func errAs[T error](err error) bool {
	var t T
	return errors.As(err, &t)
}

func outcomeIs(v evidence.Verdict) func(error) bool {
	return func(err error) bool {
		var oe *outcomeError
		return errors.As(err, &oe) && oe.verdict == v
	}
}
