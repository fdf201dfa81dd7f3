package gate

import (
	"fmt"

	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
	"github.com/gatehouse-dev/gatehouse/evidence/index"
)

// Confirm finishes a passing decision that rests on one run with the
// re-verification of its bundle (verr from bundle.Verify on d.Run.Dir).
func Confirm(req Request, d Decision, v *bundle.Verified, verr error) Decision {
	return ConfirmAll(req, d, func(index.Run) (*bundle.Verified, error) { return v, verr })
}

// ConfirmAll finishes a passing decision with the re-verification of the
// bundle of every run it rests on (verify is bundle.Verify on run.Dir with
// the release's verifier). The index is only a cache, so the decision is
// made again from the signed bundles themselves: every deciding run must
// verify and agree with its index row.
func ConfirmAll(req Request, d Decision, verify func(index.Run) (*bundle.Verified, error)) Decision {
	if !d.Pass {
		return d
	}
	runs := d.Runs
	if len(runs) == 0 && d.Run != nil {
		runs = []index.Run{*d.Run}
	}
	var bad []Refusal
	var signed []index.Run
	for _, run := range runs {
		v, verr := verify(run)
		switch {
		case verr != nil || v == nil:
			bad = append(bad, Refusal{Code: BadSignature, Message: fmt.Sprintf(
				"bundle of run %s at %s does not verify: %v", run.ID, run.Dir, verr)})
		case v.Run.ID != run.ID || v.Run.PolicyDigest != run.PolicyDigest || v.Run.ImageDigest != run.ImageDigest:
			bad = append(bad, Refusal{Code: EvidenceMismatch, Message: fmt.Sprintf(
				"index row for run %s does not match its signed bundle (run %s, policy %s, image %q): re-record it",
				run.ID, v.Run.ID, v.Run.PolicyDigest, v.Run.ImageDigest)})
		default:
			signed = append(signed, index.FromRun(run.Dir, v.Run, v.Results, v.TestResult.Result, run.KeyFingerprint, run.VerifiedAt))
		}
	}
	if len(bad) > 0 {
		out := d
		out.Pass, out.Refusals = false, bad
		return out
	}
	return Decide(req, signed)
}
