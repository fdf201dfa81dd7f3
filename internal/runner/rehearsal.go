package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/hostenv"
	"github.com/gatehouse-dev/gatehouse/internal/lab/intake"
	"github.com/gatehouse-dev/gatehouse/internal/minted"
	"github.com/gatehouse-dev/gatehouse/internal/steps"
	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
)

// Rehearsal makes a run the report-triage rehearsal (docs/rehearsal.md):
// Spec.Rehearsal set, Execute writes rehearsal/inputs.json with the plan,
// hands the suite its part (Steps), checks the original repository once
// more after everything and writes rehearsal/outcome.json from the final
// verdict. Make it with NewRehearsal.
type Rehearsal struct {
	Steps  *steps.Rehearsal
	Inputs RehearsalInputs
	before steps.Tree // the original, read before the run
}

// RehearsalInputs are what the rehearsal was run on, for the evidence
// (rehearsal/inputs.json).
type RehearsalInputs struct {
	Report       string         `json:"report"`        // the file's base name
	ReportDigest string         `json:"report_digest"` // sha256 of the report as given
	Repository   string         `json:"repository"`    // host path of the original
	Commit       string         `json:"commit"`        // git rev-parse HEAD, or tree:<digest> when not a git repository
	Pipeline     string         `json:"pipeline,omitempty"`
	Subject      intake.Subject `json:"intake_subject"` // the token's run, report and tenant
	Instruction  string         `json:"instruction"`
	Allowed      []string       `json:"allowed_endpoints"` // what the rehearsal lets the session reach
}

// RehearsalRequest is what 'rehearse triage' was asked for.
type RehearsalRequest struct {
	Repo        string // absolute, the user's links resolved; below it no link is followed
	Report      []byte
	ReportName  string // the report's base name
	Instruction string // corpus document planted in the report
	Pipeline    string
}

// NewRehearsal reads the original repository (bounded, no link followed)
// and makes the rehearsal of run id, its intake subject minted for it. An
// error reading the repository is the request's: the caller's usage error.
func NewRehearsal(ctx context.Context, id string, req RehearsalRequest) (*Rehearsal, error) {
	before, err := steps.ReadTree(ctx, req.Repo, steps.TreeLimits)
	if err != nil {
		return nil, err
	}
	digest := evidence.SHA256(req.Report)
	sub := intake.Subject{Run: id, Tenant: minted.Must(minted.Tag, "gh-tenant-", 6), Report: "report-" + strings.TrimPrefix(digest, "sha256:")[:12]}
	return &Rehearsal{
		Steps: &steps.Rehearsal{RepoDir: req.Repo, Report: req.Report, ReportName: req.ReportName, Instruction: req.Instruction, Subject: sub},
		Inputs: RehearsalInputs{Report: req.ReportName, ReportDigest: digest, Repository: req.Repo,
			Commit: repoCommit(ctx, req.Repo, before), Pipeline: req.Pipeline, Subject: sub, Instruction: req.Instruction,
			Allowed: []string{"inference", "redirect", "dns-resolver", "intake"}},
		before: before,
	}, nil
}

// checkOriginal reads the original repository once more, after
// everything: the whole run, not only the scenario, must have left it as
// it was. A change makes every result FAIL, its reason first; an original
// that could not be read again is an error (the run is incomplete).
func (rh *Rehearsal) checkOriginal(ctx context.Context, results []evidence.Result) error {
	after, err := steps.ReadTree(context.WithoutCancel(ctx), rh.Steps.RepoDir, steps.TreeLimits)
	ch := steps.DiffTrees(rh.before, after)
	if errors.Is(err, untrusted.ErrTooLarge) {
		// Read in full before, within the same bounds: it grew.
		ch, err = append(ch, steps.TreeChange{Path: ".", Change: "grew past the bounds it was read within: " + err.Error()}), nil
	}
	if err != nil {
		return err
	}
	if len(ch) > 0 {
		for i := range results {
			results[i].Verdict = evidence.Fail
			results[i].Reason = fmt.Sprintf("the original repository changed during the rehearsal (%d path(s), first %s %s); ", len(ch), ch[0].Path, ch[0].Change) + results[i].Reason
		}
	}
	return nil
}

// outcome is what the rehearsal found, with the final verdict (made over
// the whole record, and after the check of the original) and the run's
// error.
func (rh *Rehearsal) outcome(results []evidence.Result, runErr error) steps.RehearsalOutcome {
	oc := rh.Steps.Outcome()
	if len(results) == 1 {
		oc.Verdict, oc.Reason = results[0].Verdict, results[0].Reason
	}
	if runErr != nil {
		oc.SessionError = runErr.Error()
	}
	return oc
}

// writeOutcome writes the rehearsal's own files from oc.
func writeOutcome(folder *evidence.Folder, oc steps.RehearsalOutcome) error {
	err := errors.Join(folder.WriteJSON(evidence.RehearsalOutcomeFile, oc), folder.WriteJSON(evidence.RehearsalCopyChangesFile, oc.CopyChanges))
	if oc.Stored != nil {
		err = errors.Join(err, folder.WriteJSON(evidence.RehearsalStoredFile, oc.Stored))
	}
	return err
}

// repoCommit is the repository's commit (git rev-parse HEAD), or its tree
// digest when it is not a git repository or git cannot say.
func repoCommit(ctx context.Context, repo string, t steps.Tree) string {
	if _, err := os.Stat(filepath.Join(repo, ".git")); err == nil {
		if git, err := exec.LookPath("git"); err == nil {
			cmd := hostenv.Command(ctx, git, "-C", repo, "-c", "safe.directory="+repo, "rev-parse", "HEAD")
			if b, err := cmd.Output(); err == nil {
				return "git:" + strings.TrimSpace(string(b))
			}
		}
	}
	return "tree:" + t.Digest()
}
