package gate

import (
	"fmt"
	"sort"
	"time"

	"gatehouse/evidence"
	"gatehouse/evidence/index"
)

// checkGates requires, for every required gate and every path, at least one
// result, and that every result there is PASS with its positive control.
func checkGates(req Request, run *index.Run) []Refusal {
	paths := req.Paths
	if len(paths) == 0 {
		paths = Paths
	}
	required := req.Require
	if len(required) == 0 {
		seen := map[string]bool{}
		for _, r := range run.Results {
			if !seen[r.Gate] {
				seen[r.Gate] = true
				required = append(required, r.Gate)
			}
		}
		sort.Strings(required)
	}
	if len(required) == 0 {
		return []Refusal{{Code: GateMissing, Message: fmt.Sprintf("run %s has no gate results", run.ID)}}
	}
	var out []Refusal
	for _, g := range required {
		for _, p := range paths {
			out = append(out, checkOne(req, run, g, p)...)
		}
	}
	return out
}

func checkOne(req Request, run *index.Run, gate, path string) []Refusal {
	var out []Refusal
	found := false
	for _, r := range run.Results {
		if r.Gate != gate || r.Path != path {
			continue
		}
		found = true
		base := Refusal{Gate: gate, Path: path, Scenario: r.Scenario}
		switch {
		case r.Verdict == evidence.Fail:
			base.Code = GateFail
			base.Message = fmt.Sprintf("gate %s FAILED on path %s: scenario %q (run %s)", gate, path, r.Scenario, run.ID)
		case r.Verdict != evidence.Pass:
			base.Code = GateInconclusive
			base.Message = fmt.Sprintf("gate %s is %s on path %s: scenario %q (run %s)", gate, r.Verdict, path, r.Scenario, run.ID)
		case !r.Control:
			base.Code = GateInconclusive
			base.Message = fmt.Sprintf("gate %s on path %s: scenario %q passed but its positive control did not work, so the pass proves nothing (run %s)", gate, path, r.Scenario, run.ID)
		case gate == "stop-signal" && req.MaxStop > 0 && r.StopLimitMS <= 0:
			base.Code = StopTooSlow
			base.Message = fmt.Sprintf("gate %s on path %s: the evidence does not say what stop limit it was judged against, so --max-stop %s cannot be checked (run %s)", gate, path, req.MaxStop, run.ID)
		case gate == "stop-signal" && req.MaxStop > 0 && time.Duration(r.StopLimitMS*float64(time.Millisecond)) > req.MaxStop:
			base.Code = StopTooSlow
			base.Message = fmt.Sprintf("gate %s on path %s passed against a stop limit of %s, more than --max-stop %s (run %s)", gate, path, time.Duration(r.StopLimitMS*float64(time.Millisecond)), req.MaxStop, run.ID)
		default:
			continue
		}
		out = append(out, base)
	}
	if !found {
		out = append(out, Refusal{Code: GateMissing, Gate: gate, Path: path,
			Message: fmt.Sprintf("gate %s has no result on path %s (run %s)", gate, path, run.ID)})
	}
	return out
}
