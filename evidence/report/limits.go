package report

import (
	"fmt"
	"sort"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// NotProven says what a run's evidence does not prove, in the words both the
// report and `gatehouse verify` print. A verified PASS is easily read as
// "the sandbox is safe"; these lines are there to stop that reading.
func NotProven(run evidence.Run) []string {
	what := fmt.Sprintf("target %s, profile %s (policy %s)", run.Target, run.Profile, run.PolicyDigest)
	if run.ImageDigest != "" {
		what += ", image " + run.ImageDigest
	}
	if run.Model != "" || run.Agent != "" {
		what += fmt.Sprintf(", model %q, agent %q", run.Model, run.Agent)
	}
	out := []string{
		"A PASS proves only that the attempts recorded here, from corpus " + run.Corpus +
			", did not get through " + what + ", on the kernel and runtime recorded in the effective configuration, on " +
			run.Start.Format("2006-01-02") + ".",
		"It does not prove that every prompt injection fails, that no other attempt or technique would get through, or that no sandbox escape exists.",
		"Gates that were not run (or were SKIPPED or INCONCLUSIVE) prove nothing either way.",
		"For long-lived-secret, foreign-storage and cross-session, \"nothing read\" is partly the probe's silence: a FAIL there is proof (the probe cannot invent a random value), a PASS is not proof that nothing was read inside the sandbox.",
		"A signature proves who sealed these files and that they were not changed since; it does not make the harness, the probe or the lab correct.",
		"Any change to the runtime, kernel, image, policy files, model, agent or its tools needs a new run: this evidence does not carry over.",
	}
	names := make([]string, 0, len(run.TracesCut))
	for n := range run.TracesCut {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := run.TracesCut[n]
		out = append(out, fmt.Sprintf("%s is not whole: it reached its limit (%d lines, %d bytes) and dropped %d later line(s), %d bytes; what they recorded is in no evidence.",
			n, c.Lines, c.Bytes, c.DroppedLines, c.DroppedBytes))
	}
	return out
}
