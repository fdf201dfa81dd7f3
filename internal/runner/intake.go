package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/corpus"
	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab/intake/contract"
)

// IntakeSpec is a run of the intake gate (docs/intake.md): the contract's
// checks against a results-intake service. Zero ID: made here.
type IntakeSpec struct {
	ID           string
	Out          string // folder that receives the run folder
	Target       string // what was tested: "reference", or the service's URL
	ContractFile string // "" for the reference service's own mapping
	Contract     []byte // the contract as recorded: the gate's policy (policy/intake.yaml)
	Options      contract.Options
	// Begin, when set, is called once the folder holds the policy, before
	// the checks run: the CLI prints its header there.
	Begin func(rec *evidence.Run)
}

// Intake runs the intake gate and writes its run folder as Execute does
// (policy/, the traces, results.json and run.json, verdicts made final by
// what the traces left out); Seal finishes it. A run that could not finish
// is an error, its folder kept under its partial name, marked incomplete.
func Intake(ctx context.Context, spec IntakeSpec) (*Outcome, error) {
	id := spec.ID
	if id == "" {
		id = NewID()
	}
	folder, err := evidence.Create(spec.Out, id)
	if err != nil {
		return nil, err
	}
	// The contract is this gate's policy: its digest is computed as verify
	// recomputes it from the recorded files.
	files := map[string]string{"intake.yaml": evidence.SHA256(spec.Contract)}
	rec := evidence.Run{ID: id, Harness: evidence.HarnessVersion(), Target: "intake", Profile: spec.Target,
		ProfileFile: spec.ContractFile, PolicyDigest: evidence.PolicyDigest(files), PolicyFiles: files,
		Corpus: corpus.Version(), Gates: []string{"intake"}, Start: time.Now().UTC()}
	if err := folder.WriteFile(evidence.PolicyDir+"/intake.yaml", spec.Contract); err != nil {
		folder.Abandon()
		return nil, err
	}
	if spec.Begin != nil {
		spec.Begin(&rec)
	}
	checks, runErr := contract.Run(ctx, spec.Options)
	rec.End = time.Now().UTC()
	results := make([]evidence.Result, 0, len(checks))
	for _, c := range checks {
		r := evidence.Result{Gate: "intake", Scenario: c.Name, Path: "normal", Verdict: c.Verdict, Reason: c.Reason, Start: rec.Start}
		for _, ex := range c.Exchanges {
			r.Findings = append(r.Findings, exchangeLine(ex))
			if err := folder.AppendJSONL(evidence.IntakeTrace, struct {
				Check string `json:"check"`
				contract.Exchange
			}{c.Name, ex}); err != nil {
				runErr = errors.Join(runErr, err)
			}
		}
		results = append(results, r)
	}
	if _, err := closeTraces(folder, &rec, results, evidence.IntakeTrace); err != nil {
		runErr = errors.Join(runErr, err)
	}
	if runErr == nil && ctx.Err() != nil {
		runErr = ctx.Err()
	}
	if err := writeRecord(folder, &rec, results, runErr, "intake"); err != nil {
		if runErr != nil {
			err = fmt.Errorf("intake: %w", err)
		}
		return nil, err
	}
	return &Outcome{Folder: folder, Record: &rec, Results: results}, nil
}

// exchangeLine is one exchange as a finding: the request, then the answer.
func exchangeLine(ex contract.Exchange) string {
	ans := fmt.Sprintf("-> %d %s", ex.Status, ex.Response)
	if ex.Status == 0 {
		ans = "-> no answer: " + ex.Error
	}
	const max = 1 << 10
	s := strings.TrimRight(ex.Request, "\n") + "\n" + ans
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}
