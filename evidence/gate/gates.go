package gate

import (
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/index"
)

// checkGates requires, for every required gate and every path, a run that
// has a result there, and that every result of the newest such run is PASS
// with its positive control.
func checkGates(req Request, e *pool) []Refusal {
	var out []Refusal
	for _, g := range e.required {
		for _, p := range e.paths {
			run := e.run(g, p)
			if run == nil {
				out = append(out, Refusal{Code: GateMissing, Gate: g, Path: p,
					Message: fmt.Sprintf("gate %s has no result on path %s (%s)", g, p, e.none())})
				continue
			}
			out = append(out, checkOne(req, run, g, p)...)
		}
	}
	return out
}

func checkOne(req Request, run *index.Run, gate, path string) []Refusal {
	var out []Refusal
	for _, r := range run.Results {
		if r.Gate != gate || r.Path != path {
			continue
		}
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
	return out
}

// none says which runs were looked at for a gate and path none has.
func (e *pool) none() string {
	if len(e.runs) == 1 {
		return "run " + e.runs[0].ID
	}
	return fmt.Sprintf("none of %d runs of this policy and image has it; newest run %s", len(e.runs), e.runs[0].ID)
}
