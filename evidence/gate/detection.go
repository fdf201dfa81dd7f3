package gate

import (
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence/index"
)

// checkDetection requires, for every gate in req.RequireDetection and
// every path, that detection was measured and that every observable
// attempt was detected, no later than req.MaxDetectionLatency when set.
// An attempt no monitor could observe is not a miss, but a gate whose
// attempts were all unobservable has shown no detection: refused.
func checkDetection(req Request, e *pool) []Refusal {
	var out []Refusal
	for _, g := range req.RequireDetection {
		for _, p := range e.paths {
			run := e.run(g, p)
			if run == nil {
				out = append(out, Refusal{Code: GateMissing, Gate: g, Path: p,
					Message: fmt.Sprintf("gate %s has no result on path %s to show detection (%s)", g, p, e.none())})
				continue
			}
			out = append(out, detectionOne(req, run, g, p)...)
		}
	}
	return out
}

func detectionOne(req Request, run *index.Run, gate, path string) []Refusal {
	var out []Refusal
	for _, r := range run.Results {
		if r.Gate != gate || r.Path != path {
			continue
		}
		base := Refusal{Gate: gate, Path: path, Scenario: r.Scenario}
		d := r.Detection
		if d == nil || !d.Measured {
			base.Code = DetectionNotMeasured
			base.Message = fmt.Sprintf("gate %s on path %s: detection was not measured (run %s had no --monitor or --alerts), so --require-detection cannot be met", gate, path, run.ID)
			out = append(out, base)
			continue
		}
		observable := 0
		for _, a := range d.Attempts {
			if !a.Observable {
				continue
			}
			observable++
			what := fmt.Sprintf("attempt %s (%s %s)", a.ID, a.Kind, a.Object)
			rf := base
			switch {
			case a.Detected == nil:
				rf.Code = DetectionMissed
				rf.Message = fmt.Sprintf("gate %s on path %s: %s was not detected: %s (run %s)", gate, path, what, a.Reason, run.ID)
			case req.MaxDetectionLatency > 0 && a.Detected.LatencyMS == nil:
				rf.Code = DetectionTooSlow
				rf.Message = fmt.Sprintf("gate %s on path %s: %s was detected by %s but its latency was not measured (imported after the fact), so --max-detection-latency %s cannot be checked (run %s)", gate, path, what, a.Detected.Source, req.MaxDetectionLatency, run.ID)
			case req.MaxDetectionLatency > 0 && msDuration(*a.Detected.LatencyMS) > req.MaxDetectionLatency:
				rf.Code = DetectionTooSlow
				rf.Message = fmt.Sprintf("gate %s on path %s: %s was detected by %s after %s, later than --max-detection-latency %s (run %s)", gate, path, what, a.Detected.Source, msDuration(*a.Detected.LatencyMS), req.MaxDetectionLatency, run.ID)
			default:
				continue
			}
			out = append(out, rf)
		}
		if observable == 0 {
			base.Code = DetectionMissed
			base.Message = fmt.Sprintf("gate %s on path %s: no attempt was observable by the run's detectors (%s), so detection was not shown (run %s)", gate, path, firstReason(r), run.ID)
			out = append(out, base)
		}
	}
	return out
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

func firstReason(r index.Result) string {
	for _, a := range r.Detection.Attempts {
		if a.Reason != "" {
			return a.Reason
		}
	}
	return "no attempts"
}
