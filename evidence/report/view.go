package report

import (
	"fmt"
	"html/template"
	"sort"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// Caps on what one scenario shows; the traces in the bundle hold the rest.
const (
	maxDeciding = 50
	maxOther    = 20
	maxAttempts = 50
)

type kv struct{ Key, Value string }

type count struct {
	Verdict evidence.Verdict
	N       int
}

type scenario struct {
	evidence.Result
	Anchor       string
	Deciding     []evidence.Hit // the forbidden hits (Result.Hits)
	DecidingMore int
	Other        []evidence.Hit // the session's other hits, e.g. the positive control
	OtherMore    int
	Tried        []evidence.Attempt // what the probe says it tried
	TriedMore    int
	Timings      []kv
	// Detection, scored apart from the verdict: the summary cell, why it
	// was not measured (if so) and one row per attempt.
	Detected      string
	DetectionNote string
	DetectRows    []detectRow
	DetectMore    int
	// Responded is the summary cell of the responses (run --respond);
	// Responses one block per session answered.
	Responded string
	Responses []responseView
	// Timelines are the scenario's sessions on one time axis each.
	Timelines     []timelineView
	TimelinesMore int
}

type timelineView struct {
	Session string
	SVG     template.HTML // rendered by renderSVG, every value escaped
	Origin  string        // what t = 0 is
	Notes   []string      // records on file but not drawn, and why
}

type responseView struct {
	Session, Mode, Trigger, Hook, KernelGone string
	Effects                                  []effectRow
	Notes                                    []string
}

type effectRow struct {
	Effect, Observed, Latency, Reason string
}

type detectRow struct {
	ID, Kind, Object, Prevented, Detected, Latency, Reason string
}

type pathConfig struct {
	Path string
	Rows []kv
}

// page is the view model the template renders.
type page struct {
	Run        evidence.Run
	Overall    evidence.Verdict
	Counts     []count
	Took       string
	Scenarios  []scenario
	Effective  []pathConfig
	Policy     []kv
	NotProven  []string
	Unreadable int
	Truncated  bool
}

func newPage(in Input) page {
	p := page{Run: in.Run, NotProven: NotProven(in.Run), Unreadable: in.Unreadable, Truncated: in.Truncated}
	p.Overall, p.Counts = overall(in.Results)
	if !in.Run.End.IsZero() {
		p.Took = in.Run.End.Sub(in.Run.Start).Round(time.Millisecond).String()
	}
	results := append([]evidence.Result(nil), in.Results...)
	sort.SliceStable(results, func(i, j int) bool {
		if results[i].Gate != results[j].Gate {
			return results[i].Gate < results[j].Gate
		}
		return results[i].Path > results[j].Path // normal before assume-breach
	})
	for i, r := range results {
		p.Scenarios = append(p.Scenarios, newScenario(i, r, in))
	}
	paths := make([]string, 0, len(in.Run.Effective))
	for path := range in.Run.Effective {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		pc := pathConfig{Path: path}
		flatten("", in.Run.Effective[path], &pc.Rows)
		p.Effective = append(p.Effective, pc)
	}
	for name, d := range in.Run.PolicyFiles {
		p.Policy = append(p.Policy, kv{name, d})
	}
	sort.Slice(p.Policy, func(i, j int) bool { return p.Policy[i].Key < p.Policy[j].Key })
	return p
}

// overall fails closed: any FAIL is FAIL, anything not PASS (or nothing at
// all) is INCONCLUSIVE.
func overall(rs []evidence.Result) (evidence.Verdict, []count) {
	n := map[evidence.Verdict]int{}
	for _, r := range rs {
		n[r.Verdict]++
	}
	var counts []count
	for _, v := range []evidence.Verdict{evidence.Pass, evidence.Fail, evidence.Inconclusive, evidence.Skipped} {
		if n[v] > 0 {
			counts = append(counts, count{v, n[v]})
		}
	}
	switch {
	case n[evidence.Fail] > 0:
		return evidence.Fail, counts
	case len(rs) == 0 || n[evidence.Pass] != len(rs):
		return evidence.Inconclusive, counts
	}
	return evidence.Pass, counts
}

func newScenario(i int, r evidence.Result, in Input) scenario {
	s := scenario{Result: r, Anchor: fmt.Sprintf("s%d", i)}
	s.Deciding, s.DecidingMore = capped(r.Hits, maxDeciding)
	deciding := map[string]bool{}
	for _, h := range r.Hits {
		deciding[hitKey(h)] = true
	}
	var other []evidence.Hit
	var tried []evidence.Attempt
	if r.Session != "" {
		for _, h := range in.Hits {
			if h.Session == r.Session && !deciding[hitKey(h)] {
				other = append(other, h)
			}
		}
		for _, a := range in.Attempts {
			if a.Session == r.Session {
				tried = append(tried, a)
			}
		}
	}
	s.Other, s.OtherMore = capped(other, maxOther)
	s.Tried, s.TriedMore = capped(tried, maxAttempts)
	for k, v := range r.Timings {
		s.Timings = append(s.Timings, kv{k, fmt.Sprintf("%.1f ms", v)})
	}
	sort.Slice(s.Timings, func(i, j int) bool { return s.Timings[i].Key < s.Timings[j].Key })
	s.Timelines, s.TimelinesMore = timelines(r, in)
	s.Detected = evidence.DetectionCell(r)
	s.Responded = evidence.ResponseCell(r)
	if s.Responded == "" {
		s.Responded = "—"
	}
	for _, rp := range r.Responses {
		v := responseView{Session: rp.Session, Mode: rp.Mode, Notes: rp.Notes,
			Trigger: fmt.Sprintf("%s · %s · %s %s", rp.Trigger.Source, rp.Trigger.Rule, rp.Trigger.Kind, rp.Trigger.Object)}
		if rp.Hook != nil {
			v.Hook = fmt.Sprintf("exit %d %s", rp.Hook.Exit, rp.Hook.Error)
		}
		if rp.KernelGoneMS != nil {
			v.KernelGone = fmt.Sprintf("%.1f ms", *rp.KernelGoneMS)
		}
		for _, e := range rp.Effects {
			row := effectRow{Effect: e.Effect, Observed: "no", Latency: "—", Reason: e.Reason}
			if e.Observed {
				row.Observed = "yes"
				if e.Before {
					row.Observed = "yes, before the response"
				}
				if e.LatencyMS != nil {
					row.Latency = fmt.Sprintf("%.1f ms", *e.LatencyMS)
				}
			}
			v.Effects = append(v.Effects, row)
		}
		s.Responses = append(s.Responses, v)
	}
	switch d := r.Detection; {
	case d == nil:
		s.DetectionNote = evidence.NotMeasured
	case !d.Measured:
		s.DetectionNote = d.Reason
	default:
		rows, more := capped(d.Attempts, maxAttempts)
		s.DetectMore = more
		for _, a := range rows {
			row := detectRow{ID: a.ID, Kind: a.Kind, Object: a.Object, Prevented: "cannot tell", Detected: "no", Latency: "—", Reason: a.Reason}
			if a.Prevented != nil {
				row.Prevented = map[bool]string{true: "yes", false: "no"}[*a.Prevented]
			}
			if !a.Observable {
				row.Detected = "not observable"
			}
			if a.Detected != nil {
				row.Detected = a.Detected.Source + " · " + a.Detected.Rule
				row.Latency = "not measured"
				if a.Detected.LatencyMS != nil {
					row.Latency = fmt.Sprintf("%.1f ms", *a.Detected.LatencyMS)
				}
			}
			s.DetectRows = append(s.DetectRows, row)
		}
	}
	return s
}

func hitKey(h evidence.Hit) string {
	return h.Time.UTC().Format(time.RFC3339Nano) + "\x00" + h.Endpoint + "\x00" + h.Src + "\x00" + h.Summary
}

func capped[T any](xs []T, n int) ([]T, int) {
	if len(xs) <= n {
		return xs, 0
	}
	return xs[:n], len(xs) - n
}

// flatten turns the effective config (decoded JSON) into key/value rows:
// nested maps become dotted keys, lists one item per line (argv on one line,
// as it would be typed).
func flatten(prefix string, v any, out *[]kv) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			name := k
			if prefix != "" {
				name = prefix + "." + k
			}
			flatten(name, x[k], out)
		}
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = fmt.Sprint(e)
		}
		sep := "\n"
		if prefix == "argv" {
			sep = " "
		}
		*out = append(*out, kv{prefix, strings.Join(parts, sep)})
	case nil:
		*out = append(*out, kv{prefix, ""})
	default:
		*out = append(*out, kv{prefix, fmt.Sprint(x)})
	}
}
