package gate

import (
	"fmt"

	"gatehouse/evidence/bundle"
	"gatehouse/evidence/index"
)

// Confirm finishes a passing decision with the re-verification of its
// bundle (verr from bundle.Verify on d.Run.Dir). The index is only a cache,
// so the decision is made again from the signed bundle itself.
func Confirm(req Request, d Decision, v *bundle.Verified, verr error) Decision {
	if !d.Pass {
		return d
	}
	if verr != nil || v == nil {
		return refuse(d.Run, Refusal{Code: BadSignature, Message: fmt.Sprintf(
			"bundle of run %s at %s does not verify: %v", d.Run.ID, d.Run.Dir, verr)})
	}
	if v.Run.ID != d.Run.ID || v.Run.PolicyDigest != d.Run.PolicyDigest || v.Run.ImageDigest != d.Run.ImageDigest {
		return refuse(d.Run, Refusal{Code: EvidenceMismatch, Message: fmt.Sprintf(
			"index row for run %s does not match its signed bundle (run %s, policy %s, image %q): re-record it",
			d.Run.ID, v.Run.ID, v.Run.PolicyDigest, v.Run.ImageDigest)})
	}
	signed := index.FromRun(d.Run.Dir, v.Run, v.Results, v.TestResult.Result, d.Run.KeyFingerprint, d.Run.VerifiedAt)
	return Decide(req, []index.Run{signed})
}
