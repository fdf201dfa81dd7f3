// Package gate decides whether recorded evidence allows a release. Decide is
// a pure function over index rows; Confirm repeats the decision over the
// chosen bundle once it has been re-verified, so that an edited index can
// never pass a release on its own.
package gate

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence/index"
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

// Decision is the outcome. Runs are the runs the decision rests on, newest
// first: for every required gate and path the newest run that has it
// (several when the evidence is the shards of a run group). Run is the
// newest of them (nil when none matched); the caller must re-verify every
// run's Dir and call Confirm or ConfirmAll.
type Decision struct {
	Pass     bool
	Run      *index.Run
	Runs     []index.Run
	Decided  []Decided
	Refusals []Refusal
}

// Decided says which run decided one required gate on one path.
type Decided struct {
	Gate, Path, RunID string
}

// Reason is a one-line summary for the CLI.
func (d Decision) Reason() string {
	if d.Pass {
		if len(d.Runs) > 1 {
			ids := make([]string, len(d.Runs))
			for i, r := range d.Runs {
				ids[i] = r.ID
			}
			return fmt.Sprintf("pass: runs %s, the newest ended %s", strings.Join(ids, ", "), d.Run.Ended.Format(time.RFC3339))
		}
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

// Decide takes the runs recorded for exactly this policy (and image) and,
// for every required gate and path, checks the newest run that has a
// result there: an older pass never outvotes a newer failure of the same
// gate and path, and the shards of a run group, each holding some gates,
// decide together. Every deciding run must be within MaxAge.
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
	sort.SliceStable(match, func(i, j int) bool {
		if !match[i].Ended.Equal(match[j].Ended) {
			return match[i].Ended.After(match[j].Ended)
		}
		return match[i].ID > match[j].ID
	})
	e := newPool(req, match)
	d := Decision{Run: &match[0]}
	if len(e.required) == 0 {
		return refuse(d.Run, Refusal{Code: GateMissing, Message: fmt.Sprintf("run %s has no gate results", match[0].ID)})
	}
	d.Runs, d.Decided = e.deciders()
	if len(d.Runs) > 0 {
		d.Run = &d.Runs[0]
	}
	if req.MaxAge > 0 {
		var old []Refusal
		for _, run := range d.Runs {
			if age := req.Now.Sub(run.Ended); age > req.MaxAge {
				old = append(old, Refusal{Code: TooOld, Message: fmt.Sprintf(
					"newest evidence (run %s, ended %s%s) is %s old, more than --max-age %s",
					run.ID, run.Ended.Format(time.RFC3339), e.names(run.ID), age.Round(time.Second), req.MaxAge)})
			}
		}
		if len(old) > 0 {
			d.Refusals = old
			return d
		}
	}
	if rs := append(checkGates(req, e), checkDetection(req, e)...); len(rs) > 0 {
		d.Refusals = rs
		return d
	}
	d.Pass = true
	return d
}

// pool is the runs of one policy and image, newest first, and the
// gates a release requires of them.
type pool struct {
	runs     []index.Run
	paths    []string
	required []string
	detect   []string                 // gates whose detection is required
	decider  map[[2]string]*index.Run // (gate, path) -> the newest run with a result there
}

func newPool(req Request, runs []index.Run) *pool {
	e := &pool{runs: runs, paths: req.Paths, required: req.Require, detect: req.RequireDetection, decider: map[[2]string]*index.Run{}}
	if len(e.paths) == 0 {
		e.paths = Paths
	}
	if len(e.required) == 0 {
		// Every gate the evidence has: a group's shards together.
		seen := map[string]bool{}
		for _, run := range runs {
			for _, r := range run.Results {
				if !seen[r.Gate] {
					seen[r.Gate] = true
					e.required = append(e.required, r.Gate)
				}
			}
		}
		sort.Strings(e.required)
	}
	for i := range runs {
		for _, r := range runs[i].Results {
			k := [2]string{r.Gate, r.Path}
			if e.decider[k] == nil {
				e.decider[k] = &runs[i]
			}
		}
	}
	return e
}

// run is the run that decides gate on path; nil when none has it.
func (e *pool) run(gate, path string) *index.Run { return e.decider[[2]string{gate, path}] }

// deciders are the runs that decide a required (or detection-required)
// gate and path, newest first, and which decides what.
func (e *pool) deciders() ([]index.Run, []Decided) {
	used := map[string]bool{}
	var decided []Decided
	for _, g := range append(append([]string(nil), e.required...), e.detect...) {
		for _, p := range e.paths {
			if r := e.run(g, p); r != nil && !slices.Contains(decided, Decided{g, p, r.ID}) {
				used[r.ID] = true
				decided = append(decided, Decided{Gate: g, Path: p, RunID: r.ID})
			}
		}
	}
	var runs []index.Run
	for _, r := range e.runs {
		if used[r.ID] {
			runs = append(runs, r)
		}
	}
	return runs, decided
}

// names says which gates a run decides, when it does not decide them all.
func (e *pool) names(id string) string {
	var gp []string
	all := true
	for _, g := range e.required {
		for _, p := range e.paths {
			if r := e.run(g, p); r != nil && r.ID == id {
				gp = append(gp, g+"/"+p)
			} else {
				all = false
			}
		}
	}
	if all {
		return ""
	}
	return ", deciding " + strings.Join(gp, ", ")
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
