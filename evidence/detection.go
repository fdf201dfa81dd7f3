package evidence

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Detection is a scenario's detection score, kept apart from its verdict:
// a verdict says whether the forbidden thing happened (prevention); this
// says whether telemetry saw each attempt and how late. Nothing in it
// changes a verdict.
type Detection struct {
	// Measured is false when the run had no detector: then nothing was
	// missed, detection was simply not measured (Reason says so).
	Measured bool     `json:"measured"`
	Reason   string   `json:"reason,omitempty"`
	Sources  []string `json:"sources,omitempty"`
	// Dropped counts events lost before matching (a source's own drops
	// under a flood, or the run's bounded buffer): a miss may be one.
	Dropped  uint64             `json:"dropped,omitempty"`
	Attempts []DetectionAttempt `json:"attempts,omitempty"`
	Summary  DetectionSummary   `json:"summary"`
}

// DetectionAttempt is one attempt's score. Observable is false when no
// monitor could have seen it (no observable object, or a session host
// monitors cannot see into); Reason says why, or why it was not detected.
type DetectionAttempt struct {
	ID      string `json:"id"`
	Session string `json:"session"`
	Kind    string `json:"kind,omitempty"`
	Object  string `json:"object,omitempty"`
	// Prevented is the verdict logic's view of this attempt: true when
	// nothing reached an endpoint for it, false when a forbidden hit is
	// tied to it, null when the evidence cannot tell.
	Prevented  *bool     `json:"prevented"`
	Observable bool      `json:"observable"`
	Detected   *Detected `json:"detected"`
	Reason     string    `json:"reason,omitempty"`
}

// Detected is the first matching event: which source and rule, and the
// latency from the attempt's start to when Gatehouse received the event
// (both on the harness's clock). LatencyMS is null for an event imported
// after the fact: detected, latency not measured.
type Detected struct {
	Source    string   `json:"source"`
	Rule      string   `json:"rule"`
	LatencyMS *float64 `json:"latency_ms"`
}

// DetectionSummary counts a scenario's (or a run's) attempts.
type DetectionSummary struct {
	Attempts   int      `json:"attempts"`
	Observable int      `json:"observable"`
	Detected   int      `json:"detected"`
	P50MS      *float64 `json:"p50_ms,omitempty"`
	P95MS      *float64 `json:"p95_ms,omitempty"`
}

// NotMeasured is the reason a result gives when the run had no detector.
const NotMeasured = "not measured: the run had no detector (--monitor or --alerts)"

// Summarize counts attempts and computes latency percentiles over the
// detections whose latency was measured.
func Summarize(as []DetectionAttempt) DetectionSummary {
	s := DetectionSummary{Attempts: len(as)}
	var lat []float64
	for _, a := range as {
		if a.Observable {
			s.Observable++
		}
		if a.Detected != nil {
			s.Detected++
			if a.Detected.LatencyMS != nil {
				lat = append(lat, *a.Detected.LatencyMS)
			}
		}
	}
	if len(lat) > 0 {
		sort.Float64s(lat)
		p50, p95 := percentile(lat, 50), percentile(lat, 95)
		s.P50MS, s.P95MS = &p50, &p95
	}
	return s
}

// percentile by nearest rank over sorted values.
func percentile(sorted []float64, p float64) float64 {
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	return sorted[i]
}

// DetectionCell is the summary table's word on results: "12/20 p50 40ms"
// (detected of observable), or "not measured". Attempts no monitor could
// observe are not counted as missed.
func DetectionCell(rs ...Result) string {
	var all []DetectionAttempt
	measured := false
	for _, r := range rs {
		if r.Detection != nil && r.Detection.Measured {
			measured = true
			all = append(all, r.Detection.Attempts...)
		}
	}
	if !measured {
		return "not measured"
	}
	s := Summarize(all)
	if s.Observable == 0 && s.Attempts > 0 {
		return "not observable"
	}
	cell := fmt.Sprintf("%d/%d", s.Detected, s.Observable)
	if s.P50MS != nil {
		cell += fmt.Sprintf(" p50 %s", fmtMS(*s.P50MS))
	}
	return cell
}

func fmtMS(ms float64) string {
	if ms >= 1000 {
		return strings.TrimSuffix(fmt.Sprintf("%.1f", ms/1000), ".0") + "s"
	}
	return fmt.Sprintf("%.0fms", ms)
}

// Prevention says, per attempt, what the verdict logic's view is: a
// violating hit tied to the attempt (its label, its destination, or, for
// DNS, its query name) means not prevented; a PASS means every attempt
// was; a FAIL whose every hit is tied to some attempt means the others
// were; anything else cannot be told.
func Prevention(verdict Verdict, violating []Hit, as []DetectionAttempt) []*bool {
	tied := make([]bool, len(violating))
	out := make([]*bool, len(as))
	for i, a := range as {
		for j, h := range violating {
			if hitFor(h, a) {
				tied[j] = true
				f := false
				out[i] = &f
			}
		}
	}
	allTied := true
	for _, t := range tied {
		allTied = allTied && t
	}
	for i := range as {
		if out[i] != nil {
			continue
		}
		if verdict == Pass || (verdict == Fail && allTied) {
			t := true
			out[i] = &t
		}
	}
	return out
}

func hitFor(h Hit, a DetectionAttempt) bool {
	switch {
	case h.Attempt != "" && h.Attempt == a.ID:
		return true
	case a.Kind == "connect" && a.Object != "" && h.Dst == a.Object:
		return true
	case a.Kind == "dns" && a.Object != "" && strings.Contains(strings.ToLower(h.Summary), a.Object):
		return true
	}
	return false
}
