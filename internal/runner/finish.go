package runner

import (
	"errors"
	"fmt"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// closeTraces ends every run's traces: each named trace and the two every
// run folder has exist (an empty trace is evidence too), every trace file
// is closed, what each left out past its limit is recorded in rec and
// makes the verdicts it could have changed INCONCLUSIVE. It returns how
// many verdicts that changed.
func closeTraces(folder *evidence.Folder, rec *evidence.Run, results []evidence.Result, traces ...string) (int, error) {
	for _, t := range append(traces, evidence.HitsTrace, evidence.AttemptsTrace) {
		_ = folder.Touch(t)
	}
	err := folder.Close()
	rec.TracesCut = folder.Cuts()
	return evidence.RecheckTraces(results, rec.TracesCut), err
}

// writeRecord writes results.json and run.json, the run complete when
// runErr is nil. A run that could not finish keeps its partial name,
// marked incomplete, and is an error naming where its evidence is.
func writeRecord(folder *evidence.Folder, rec *evidence.Run, results []evidence.Result, runErr error, verb string) error {
	rec.Complete = runErr == nil
	if runErr != nil {
		rec.Error = runErr.Error()
	}
	if err := errors.Join(folder.WriteJSON(evidence.ResultsFile, results), folder.WriteJSON(evidence.RunFile, rec)); err != nil {
		folder.Abandon()
		return fmt.Errorf("%s: write evidence: %w", verb, err)
	}
	if runErr != nil {
		dir := folder.Abandon()
		return fmt.Errorf("%w (partial evidence kept in %s, marked incomplete)", runErr, dir)
	}
	return nil
}
