package main

import (
	"errors"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// runDoc is `run --output json`: the summary table as one document, so a
// pipeline reads the run's folder, signature and decision without
// scraping text. Progress goes to stderr in this mode.
type runDoc struct {
	Schema   string      `json:"schema"`
	ID       string      `json:"id"`
	Folder   string      `json:"folder"`
	Signed   bool        `json:"signed"`
	Signer   string      `json:"signer"` // key fingerprint or keyless identity; "" = unsigned
	Index    string      `json:"index"`
	Archive  string      `json:"archive,omitempty"`
	Group    string      `json:"group,omitempty"`
	Shard    string      `json:"shard,omitempty"`
	Decision string      `json:"decision"` // pass | fail | inconclusive
	ExitCode int         `json:"exit_code"`
	Results  []runResult `json:"results"`

	// TracesCut is run.json's traces_cut: the traces that reached their
	// limit and what they dropped (absent when every trace is whole).
	TracesCut map[string]evidence.TraceCut `json:"traces_cut,omitempty"`
	// HostWrites is run.json's host_writes: what the probe wrote on the
	// host through the sandbox, taken back or left. Not a verdict.
	HostWrites *evidence.HostWrites `json:"host_writes,omitempty"`
}

// runResult is a verify row plus what only a live run has: the response
// cell ("" when no response was asked for) and the time it took.
type runResult struct {
	resultRow
	Response   string  `json:"response"`
	DurationMS float64 `json:"duration_ms"`
}

// decide is the run's decision and exit code, as the verb exits with them.
func decide(results []evidence.Result) (string, int) {
	err := outcome(results)
	var oe *outcomeError
	switch {
	case !errors.As(err, &oe):
		return "pass", exitCode(err)
	case oe.verdict == evidence.Fail:
		return "fail", exitCode(err)
	}
	return "inconclusive", exitCode(err)
}

func runDocOf(rec evidence.Run, dir string, signer sealer, index, archive string, results []evidence.Result) runDoc {
	d := runDoc{Schema: "gatehouse.run/v1", ID: rec.ID, Folder: dir, Index: index, Archive: archive,
		Group: rec.Group, Shard: rec.Shard, Results: []runResult{}, TracesCut: rec.TracesCut, HostWrites: rec.HostWrites}
	if signer != nil {
		d.Signed, d.Signer = true, signer.Identity()
	}
	d.Decision, d.ExitCode = decide(results)
	for i, row := range rows(results) {
		d.Results = append(d.Results, runResult{resultRow: row, Response: evidence.ResponseCell(results[i]), DurationMS: results[i].DurationMS})
	}
	return d
}
