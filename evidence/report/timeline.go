package report

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// A timeline puts one session's records on one time axis: what the probe
// says it tried, what the kernel counted, what the endpoints heard, what
// telemetry reported, the stop and the response. It is built from the
// bundle, which is hostile input: every text goes through html/template
// (timeline.svg.tmpl), every lane is capped, and a record whose time is
// zero or far outside the scenario's own window is counted, never drawn
// (a zero time would put it in 1970, a forged one would squash the rest).

// Caps on one timeline; the traces in the bundle hold the rest.
const (
	maxLaneItems       = 60 // drawn items per lane, then "+N more"
	maxEndpointLanes   = 6  // one lane per endpoint, the rest share one
	maxAttemptRows     = 3  // overlapping attempts stack up to this many rows
	maxSessionsPerCase = 4  // timelines per scenario (stop-signal runs many sessions)
	maxLabel           = 36 // runes of a lane name or item label drawn
	maxTitle           = 400
)

// windowSlack is how far outside the scenario's start and end a record may
// lie and still be drawn: alerts arrive late, attempts are timed by the
// probe's clock.
const windowSlack = 10 * time.Minute

// Lane names, in the order they are drawn (endpoint lanes are "hits: …").
const (
	laneAttempts = "attempts"
	laneKernel   = "kernel"
	laneAlerts   = "alerts"
	laneResponse = "stop / response"
	hitsPrefix   = "hits: "
	otherHits    = "hits: other endpoints"
)

// Marks: how an item is drawn, and in which colour (timeline.svg.tmpl).
const (
	markAttempt   = "attempt"   // bar, blue
	markHit       = "hit"       // tick, green: a contact the policy allows
	markForbidden = "forbidden" // tick, red: a contact that decided a FAIL
	markAlert     = "alert"     // diamond, orange: when Gatehouse received it
	markAlertSrc  = "alert-src" // hollow diamond, orange: the source's own time
	markTrigger   = "trigger"   // hollow diamond, purple: the alert a response answered
	markStop      = "stop"      // diamond, purple: stop sent, response started
	markEffect    = "effect"    // circle, purple: an effect observed from outside
)

// Alert is one line of traces/alerts.jsonl as the report reads it: the
// event's fields the timeline draws and the "session/attempt" pairs it
// was matched to.
type Alert struct {
	Source, Rule, Kind, Object string
	EventTime, Received        time.Time
	Imported                   bool
	Matched                    []string
}

// alertLine is the runner's line format (steps' alertRecord around a
// detect.Event); only what the timeline uses is decoded.
type alertLine struct {
	Event *struct {
		Source    string    `json:"source"`
		Rule      string    `json:"rule"`
		Kind      string    `json:"kind"`
		Object    string    `json:"object"`
		EventTime time.Time `json:"event_time"`
		Received  time.Time `json:"received"`
		Imported  bool      `json:"imported"`
	} `json:"event"`
	Matched []string `json:"matched"`
}

// sessionRecords is everything on record about one session.
type sessionRecords struct {
	Session   string
	From, To  time.Time // the scenario's window (harness clock); zero: no bound
	Attempts  []evidence.Attempt
	Hits      []evidence.Hit
	Forbidden map[string]bool // hitKey of the hits that decided a FAIL
	Alerts    []Alert
	Detected  map[string]float64 // attempt ID -> measured detection latency
	Stops     []evidence.StopSent
	Responses []evidence.Response
	Emitted   map[string]uint64
}

// timeline is the model timeline.svg.tmpl draws. Times are ms from Origin.
type timeline struct {
	Session string
	Origin  time.Time
	SpanMS  float64
	Lanes   []tlLane
	// Undated counts records with no time (not drawn); Outside those whose
	// time is far outside the scenario's window (not drawn either).
	Undated, Outside int
}

type tlLane struct {
	Name  string
	Rows  int
	Items []tlItem
	Note  string // text drawn in the lane instead of (or beside) items
	More  int    // items over the cap, not drawn
}

type tlItem struct {
	Mark     string
	Row      int
	From, To float64 // ms from Origin; equal for a point
	Label    string  // short text drawn beside it
	Title    string  // tooltip
}

// point is a record before the axis is known.
type point struct {
	lane     string
	mark     string
	from, to time.Time
	label    string
	title    string
}

// buildTimeline is pure: the same records give the same model.
func buildTimeline(rec sessionRecords) timeline {
	tl := timeline{Session: rec.Session}
	var pts []point
	add := func(p point) {
		switch {
		case p.from.IsZero():
			tl.Undated++
		case !rec.From.IsZero() && (p.from.Before(rec.From.Add(-windowSlack)) || p.to.After(rec.To.Add(windowSlack))):
			tl.Outside++
		default:
			pts = append(pts, p)
		}
	}

	for _, a := range rec.Attempts {
		d := a.DurationMS
		if math.IsNaN(d) || d < 0 {
			d = 0
		}
		p := point{lane: laneAttempts, mark: markAttempt, from: a.Start, label: a.ID,
			title: fmt.Sprintf("attempt %s (%s) → %s: %s, %s (the probe's claim)", a.ID, a.Kind, a.Target, a.Outcome, fmtDur(d))}
		if a.Error != "" {
			p.title += "; error: " + a.Error
		}
		if d > windowSlack.Seconds()*1000 { // a forged duration: no bar to the end of time
			d = 0
		}
		p.to = a.Start.Add(time.Duration(d * float64(time.Millisecond)))
		add(p)
	}

	endpoints := map[string]bool{}
	for _, h := range rec.Hits {
		endpoints[h.Endpoint] = true
	}
	names := make([]string, 0, len(endpoints))
	for e := range endpoints {
		names = append(names, e)
	}
	sort.Strings(names)
	own := map[string]string{}
	for i, e := range names {
		if i < maxEndpointLanes || len(names) == maxEndpointLanes+1 {
			own[e] = hitsPrefix + e
		} else {
			own[e] = otherHits
		}
	}
	for _, h := range rec.Hits {
		p := point{lane: own[h.Endpoint], mark: markHit, from: h.Time, to: h.Time,
			title: fmt.Sprintf("%s %s %s → %s: %s", h.Endpoint, h.Proto, h.Src, h.Dst, h.Summary)}
		if rec.Forbidden[hitKey(h)] {
			p.mark, p.title = markForbidden, "FORBIDDEN contact (decided the FAIL): "+p.title
		}
		if h.Conn {
			p.title += " (connection accepted)"
		}
		add(p)
	}

	// The first alert for each detected attempt carries its measured latency.
	labelled := map[string]bool{}
	alerts := append([]Alert(nil), rec.Alerts...)
	sort.SliceStable(alerts, func(i, j int) bool { return alerts[i].Received.Before(alerts[j].Received) })
	for _, a := range alerts {
		var ids []string
		for _, m := range a.Matched {
			// A session name may hold "/" itself: match the whole prefix.
			if id, ok := strings.CutPrefix(m, rec.Session+"/"); ok {
				ids = append(ids, id)
			}
		}
		title := fmt.Sprintf("alert %s · %s: %s %s, for attempt %s", a.Source, a.Rule, a.Kind, a.Object, strings.Join(ids, ", "))
		if a.Imported || a.Received.IsZero() {
			add(point{lane: laneAlerts, mark: markAlertSrc, from: a.EventTime, to: a.EventTime, label: "imported",
				title: title + "; imported after the fact: the source's own time, latency not measured"})
			continue
		}
		label := ""
		for _, id := range ids {
			if lat, ok := rec.Detected[id]; ok && !labelled[id] {
				labelled[id] = true
				label = "+" + fmtDur(lat)
				title += fmt.Sprintf("; detected %s after the attempt started", fmtDur(lat))
				break
			}
		}
		add(point{lane: laneAlerts, mark: markAlert, from: a.Received, to: a.Received, label: label,
			title: title + "; received " + a.Received.UTC().Format("15:04:05.000")})
		if !a.EventTime.IsZero() && !a.EventTime.Equal(a.Received) {
			add(point{lane: laneAlerts, mark: markAlertSrc, from: a.EventTime, to: a.EventTime,
				title: title + "; the source's own time for it " + a.EventTime.UTC().Format("15:04:05.000") + " (a clock check only)"})
		}
	}

	for _, s := range rec.Stops {
		add(point{lane: laneResponse, mark: markStop, from: s.At, to: s.At, label: "stop",
			title: "stop sent (stop-signal)"})
		if s.LatencyMS != nil && !s.At.IsZero() && *s.LatencyMS >= 0 {
			at := s.At.Add(time.Duration(*s.LatencyMS * float64(time.Millisecond)))
			add(point{lane: laneResponse, mark: markEffect, from: at, to: at, label: "stopped +" + fmtDur(*s.LatencyMS),
				title: fmt.Sprintf("stopped acting %s after the stop (last heartbeat or processes gone, seen from outside)", fmtDur(*s.LatencyMS))})
		}
	}
	var missed []string
	for _, r := range rec.Responses {
		t := r.Trigger
		add(point{lane: laneResponse, mark: markTrigger, from: t.Received, to: t.Received, label: "trigger",
			title: fmt.Sprintf("response %s triggered by %s · %s: %s %s", r.Mode, t.Source, t.Rule, t.Kind, t.Object)})
		add(point{lane: laneResponse, mark: markStop, from: r.Started, to: r.Started, label: r.Mode,
			title: fmt.Sprintf("response %s started", r.Mode)})
		for _, e := range r.Effects {
			if !e.Observed {
				missed = append(missed, e.Effect)
				continue
			}
			p := point{lane: laneResponse, mark: markEffect, from: e.At, to: e.At, label: e.Effect,
				title: fmt.Sprintf("%s observed from outside (polled every %s)", e.Effect, fmtDur(r.PollMS))}
			if e.LatencyMS != nil {
				p.label += " +" + fmtDur(*e.LatencyMS)
				p.title += fmt.Sprintf(", %s after the alert's receipt", fmtDur(*e.LatencyMS))
			}
			if e.Before {
				p.label += " (before)"
				p.title += "; it held already before the response: its latency says nothing about the response"
			}
			add(p)
		}
	}

	if len(pts) == 0 && len(rec.Emitted) == 0 && len(missed) == 0 {
		return tl
	}
	for _, p := range pts {
		if tl.Origin.IsZero() || p.from.Before(tl.Origin) {
			tl.Origin = p.from
		}
	}
	for _, p := range pts {
		if e := msSince(tl.Origin, p.to); e > tl.SpanMS {
			tl.SpanMS = e
		}
	}

	byLane := map[string][]tlItem{}
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].from.Before(pts[j].from) })
	for _, p := range pts {
		byLane[p.lane] = append(byLane[p.lane], tlItem{Mark: p.mark, From: msSince(tl.Origin, p.from),
			To: msSince(tl.Origin, p.to), Label: clip(p.label, maxLabel), Title: clip(p.title, maxTitle)})
	}
	lane := func(name string) tlLane {
		items, more := capped(byLane[name], maxLaneItems)
		return tlLane{Name: clip(name, maxLabel), Rows: 1, Items: items, More: more}
	}
	if l := lane(laneAttempts); len(l.Items) > 0 {
		stack(&l)
		tl.Lanes = append(tl.Lanes, l)
	}
	if len(rec.Emitted) > 0 {
		dests := make([]string, 0, len(rec.Emitted))
		for d := range rec.Emitted {
			dests = append(dests, d)
		}
		sort.Strings(dests)
		parts := make([]string, len(dests))
		for i, d := range dests {
			parts[i] = fmt.Sprintf("%s %d", d, rec.Emitted[d])
		}
		tl.Lanes = append(tl.Lanes, tlLane{Name: laneKernel, Rows: 1,
			Note: clip("packets counted while the attempts ran (no packet times): "+strings.Join(parts, ", "), 160)})
	}
	seen := map[string]bool{}
	for _, e := range names {
		if n := own[e]; !seen[n] {
			seen[n] = true
			if l := lane(n); len(l.Items) > 0 || l.More > 0 {
				tl.Lanes = append(tl.Lanes, l)
			}
		}
	}
	if l := lane(laneAlerts); len(l.Items) > 0 {
		tl.Lanes = append(tl.Lanes, l)
	}
	if l := lane(laneResponse); len(l.Items) > 0 || len(missed) > 0 {
		if len(missed) > 0 {
			l.Note = clip("not observed: "+strings.Join(missed, ", "), 160)
		}
		tl.Lanes = append(tl.Lanes, l)
	}
	return tl
}

// stack spreads overlapping bars over up to maxAttemptRows rows (first
// row free, else the last one).
func stack(l *tlLane) {
	ends := make([]float64, maxAttemptRows)
	for i := range ends {
		ends[i] = math.Inf(-1)
	}
	for i := range l.Items {
		row := maxAttemptRows - 1
		for r, end := range ends {
			if l.Items[i].From > end {
				row = r
				break
			}
		}
		l.Items[i].Row = row
		if l.Items[i].To > ends[row] {
			ends[row] = l.Items[i].To
		}
		if row+1 > l.Rows {
			l.Rows = row + 1
		}
	}
}

func msSince(origin, t time.Time) float64 {
	return float64(t.Sub(origin).Microseconds()) / 1000
}

// fmtDur is a duration in ms as a person reads it: "850 ms", "1.25 s".
func fmtDur(ms float64) string {
	switch {
	case math.IsNaN(ms) || math.IsInf(ms, 0):
		return "?"
	case math.Abs(ms) >= 1000:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", ms/1000), "0"), ".") + " s"
	case math.Abs(ms) >= 10 || ms == 0:
		return fmt.Sprintf("%.0f ms", ms)
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", ms), "0"), ".") + " ms"
}

// clip cuts s to n runes, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// recordsFor gathers a session's records from a scenario's result and
// the run's traces.
func recordsFor(session string, r evidence.Result, in Input) sessionRecords {
	rec := sessionRecords{Session: session, Forbidden: map[string]bool{}, Detected: map[string]float64{}}
	if !r.Start.IsZero() {
		rec.From = r.Start
		rec.To = r.Start.Add(time.Duration(math.Max(r.DurationMS, 0) * float64(time.Millisecond)))
	}
	seen := map[string]bool{}
	for _, h := range r.Hits {
		if h.Session == session || (h.Session == "" && session == r.Session) {
			rec.Forbidden[hitKey(h)] = true
			seen[hitKey(h)] = true
			rec.Hits = append(rec.Hits, h)
		}
	}
	for _, h := range in.Hits {
		if h.Session == session && !seen[hitKey(h)] {
			seen[hitKey(h)] = true
			rec.Hits = append(rec.Hits, h)
		}
	}
	for _, a := range in.Attempts {
		if a.Session == session {
			rec.Attempts = append(rec.Attempts, a)
		}
	}
	for _, a := range in.Alerts {
		for _, m := range a.Matched {
			if strings.HasPrefix(m, session+"/") {
				rec.Alerts = append(rec.Alerts, a)
				break
			}
		}
	}
	if d := r.Detection; d != nil {
		for _, a := range d.Attempts {
			if (a.Session == session || a.Session == "") && a.Detected != nil && a.Detected.LatencyMS != nil {
				rec.Detected[a.ID] = *a.Detected.LatencyMS
			}
		}
	}
	for _, s := range r.Stops {
		if s.Session == session {
			rec.Stops = append(rec.Stops, s)
		}
	}
	for _, x := range r.Responses {
		if x.Session == session || (x.Session == "" && session == r.Session) {
			rec.Responses = append(rec.Responses, x)
		}
	}
	if session == r.Session {
		rec.Emitted = r.Emitted
	}
	return rec
}

// sessionsOf is the scenario's own session first, then every other
// session its stops and responses name.
func sessionsOf(r evidence.Result) []string {
	var out []string
	seen := map[string]bool{}
	if r.Session != "" {
		seen[r.Session] = true
		out = append(out, r.Session)
	}
	for _, s := range r.Stops {
		if s.Session != "" && !seen[s.Session] {
			seen[s.Session] = true
			out = append(out, s.Session)
		}
	}
	for _, x := range r.Responses {
		if x.Session != "" && !seen[x.Session] {
			seen[x.Session] = true
			out = append(out, x.Session)
		}
	}
	return out
}

// timelines draws each of the scenario's sessions, up to the cap.
func timelines(r evidence.Result, in Input) ([]timelineView, int) {
	sessions, more := capped(sessionsOf(r), maxSessionsPerCase)
	var out []timelineView
	for _, s := range sessions {
		tl := buildTimeline(recordsFor(s, r, in))
		v := timelineView{Session: s}
		svg, err := renderSVG(tl)
		switch {
		case err != nil:
			v.Notes = append(v.Notes, "the timeline could not be drawn: "+err.Error())
		case svg == "":
			v.Notes = append(v.Notes, "no timed record of this session")
		default:
			v.SVG = svg
		}
		if !tl.Origin.IsZero() {
			v.Origin = tl.Origin.UTC().Format("15:04:05.000 MST") + ", span " + fmtDur(tl.SpanMS)
		}
		if tl.Undated > 0 {
			v.Notes = append(v.Notes, fmt.Sprintf("%d record(s) without a time, not drawn", tl.Undated))
		}
		if tl.Outside > 0 {
			v.Notes = append(v.Notes, fmt.Sprintf("%d record(s) timed more than %s outside the scenario, not drawn", tl.Outside, windowSlack))
		}
		out = append(out, v)
	}
	return out, more
}
