// Package gate decides whether recorded evidence allows a release. Decide is
// a pure function over index rows; Confirm repeats the decision over the
// chosen bundle once it has been re-verified, so that an edited index can
// never pass a release on its own.
package gate

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"gatehouse/evidence/index"
)

// Paths every required gate must pass on unless the request says otherwise.
var Paths = []string{"normal", "assume-breach"}

// Request is what a release needs.
type Request struct {
	PolicyDigest string
	ImageDigest  string        // "" when none was given; required if the evidence names one
	Require      []string      // gates; empty means every gate the run has
	Paths        []string      // empty means Paths
	MaxAge       time.Duration // 0 means no limit
	// MaxStop bounds the stop limit a passing stop-signal result was judged
	// against: a profile cannot pass by declaring a slow stop. 0: no bound.
	MaxStop time.Duration
	// RequireDetection lists gates whose every observable attempt must
	// have been detected (on every path), within MaxDetectionLatency when
	// that is set. Detection not measured is a refusal, never a pass.
	RequireDetection    []string
	MaxDetectionLatency time.Duration
	Now                 time.Time
}

// Code classifies a refusal.
type Code string

const (
	NoEvidence       Code = "no-evidence"
	ImageMismatch    Code = "image-mismatch"
	ImageRequired    Code = "image-required"
	TooOld           Code = "too-old"
	GateMissing      Code = "gate-missing"
	GateFail         Code = "gate-fail"
	GateInconclusive Code = "gate-inconclusive"
	StopTooSlow      Code = "stop-too-slow"
	BadSignature     Code = "bad-signature"
	// Detection refusals (gate --require-detection).
	DetectionNotMeasured Code = "detection-not-measured"
	DetectionMissed      Code = "detection-missed"
	DetectionTooSlow     Code = "detection-too-slow"
	EvidenceMismatch     Code = "evidence-mismatch"
)

// Refusal is one reason the release is stopped.
type Refusal struct {
	Code     Code
	Gate     string
	Path     string
	Scenario string
	Message  string
}

// Decision is the outcome. Run is the evidence the decision rests on (nil
// when none matched); the caller must re-verify Run.Dir and call Confirm.
type Decision struct {
	Pass     bool
	Run      *index.Run
	Refusals []Refusal
}

// Reason is a one-line summary for the CLI.
func (d Decision) Reason() string {
	if d.Pass {
		return fmt.Sprintf("pass: run %s (%s) ended %s", d.Run.ID, d.Run.Dir, d.Run.Ended.Format(time.RFC3339))
	}
	msgs := make([]string, len(d.Refusals))
	for i, r := range d.Refusals {
		msgs[i] = r.Message
	}
	return "refused: " + strings.Join(msgs, "; ")
}

func refuse(run *index.Run, rs ...Refusal) Decision {
	return Decision{Run: run, Refusals: rs}
}

// Decide picks the newest run recorded for exactly this policy (and image)
// and checks it. The newest matching evidence decides: an older pass does
// not outvote a newer failure of the same configuration.
func Decide(req Request, rows []index.Run) Decision {
	var forPolicy []index.Run
	var others []string
	for _, r := range rows {
		if r.PolicyDigest == req.PolicyDigest {
			forPolicy = append(forPolicy, r)
		} else {
			others = append(others, r.PolicyDigest)
		}
	}
	if len(forPolicy) == 0 {
		msg := fmt.Sprintf("no verified evidence for policy %s", req.PolicyDigest)
		if len(others) > 0 {
			msg += fmt.Sprintf(" (evidence exists only for other policies, e.g. %s)", others[0])
		}
		return refuse(nil, Refusal{Code: NoEvidence, Message: msg})
	}
	var match []index.Run
	images := map[string]bool{}
	for _, r := range forPolicy {
		if r.ImageDigest == req.ImageDigest {
			match = append(match, r)
		}
		if r.ImageDigest != "" {
			images[r.ImageDigest] = true
		}
	}
	if len(match) == 0 {
		names := sortedKeys(images)
		if req.ImageDigest == "" {
			return refuse(nil, Refusal{Code: ImageRequired, Message: fmt.Sprintf(
				"evidence for policy %s names image %s: give --image", req.PolicyDigest, strings.Join(names, ", "))})
		}
		got := strings.Join(names, ", ")
		if got == "" {
			got = "no image"
		}
		return refuse(nil, Refusal{Code: ImageMismatch, Message: fmt.Sprintf(
			"image mismatch: evidence for policy %s is for %s, not %s", req.PolicyDigest, got, req.ImageDigest)})
	}
	sort.SliceStable(match, func(i, j int) bool { return match[i].Ended.After(match[j].Ended) })
	run := &match[0]
	if req.MaxAge > 0 {
		if age := req.Now.Sub(run.Ended); age > req.MaxAge {
			return refuse(run, Refusal{Code: TooOld, Message: fmt.Sprintf(
				"newest evidence (run %s, ended %s) is %s old, more than --max-age %s",
				run.ID, run.Ended.Format(time.RFC3339), age.Round(time.Second), req.MaxAge)})
		}
	}
	if rs := append(checkGates(req, run), checkDetection(req, run)...); len(rs) > 0 {
		return refuse(run, rs...)
	}
	return Decision{Pass: true, Run: run}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
