package evidence

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// StopRun is one stop measured from outside the sandbox.
type StopRun struct {
	Session string
	// Heartbeats the endpoint heard from the session's main process and from
	// its escaped child before the stop: proof the heartbeat worked at all.
	MainBefore, ChildBefore bool
	// Late are heartbeats that arrived after the stop, in arrival order.
	Late []Hit
	// Gone is how long after the stop no process of the session was left;
	// negative when some were still there when observation ended.
	Gone time.Duration
	// Drained is how long after the stop the lab had recorded everything
	// of the session that had reached it, read once it was seen gone (zero:
	// not read, or it did not drain in time). A beat sent before the end
	// but still in the lab's queues then is stamped late by a starved
	// harness: the line for "acted after it was seen gone" is the later of
	// the two (issue 22).
	Drained time.Duration
	// Left describes what remained when observation ended: processes,
	// storage the target made for the session or the profile calls
	// temporary, writes made after it was seen gone. Empty when nothing did.
	Left []string
	// Unknown says why whether it was gone could not be seen (its network
	// namespace unreadable and no list of its processes): no PASS then.
	Unknown string
	// Unsearched says where the run's writes or storage after the stop
	// could not be looked for (a bind that could not be resolved, a
	// search cut at its bound): no PASS then, never "nothing found".
	Unsearched []string
	// Token: TokenChecked says the broker was asked about the session's
	// token after the stop; TokenRefused is its answer.
	TokenChecked, TokenRefused bool
	// What the machine was doing, from the kernel's pressure (PSI):
	// Window is from the stop to the end of the watch, CPUStall how long
	// tasks waited in it for a CPU, for I/O or for memory, whichever was
	// longest (the name stays for results.json's stop_runN_cpu_wait_ms); BeatWait and BeatStall the
	// same for the wait for the first heartbeats. StallKnown is false on a
	// kernel without PSI: then no timing is put down to load.
	Window, CPUStall    time.Duration
	BeatWait, BeatStall time.Duration
	StallKnown          bool
	// StopCommandOver: the profile's own stop command ran out its limit, a
	// slowness of the platform whatever the load.
	StopCommandOver bool
	// WriteWatch is how long after the session was seen gone (from a
	// beat's time later) its read-write binds were watched for writes as
	// it: a worker left behind that writes less often than that can go
	// unseen. Zero when the session was never seen gone.
	WriteWatch time.Duration
	// Superseded says why the run was measured again (its timing could not
	// be judged on a machine that busy): its timing no longer counts, but
	// anything it left or did after it was seen gone still FAILs.
	Superseded string
}

// loadShare is the least share of a window that tasks must have waited
// for a CPU for a timing in it to be put down to load.
const loadShare = 4 // one quarter

// LoadSpoiled says why the run's timing cannot be judged on the machine
// as it was: it missed a timing only by as much as the machine kept tasks
// from running, and did nothing else wrong (all of it gone, nothing after
// it was seen gone, no stop command that ran out). Never true for a run
// that left something or acted unseen: those FAIL on any machine.
func (r StopRun) LoadSpoiled(stop time.Time, limit, interval time.Duration) (string, bool) {
	if !r.StallKnown {
		return "", false
	}
	if !r.MainBefore || !r.ChildBefore {
		if r.BeatStall*loadShare >= r.BeatWait && r.BeatWait > 0 {
			return fmt.Sprintf("the machine was too loaded to judge: no heartbeat from the %s within %s of starting it, while tasks waited for a CPU, I/O or memory %s of that time (kernel pressure)",
				missingWho(r), r.BeatWait.Round(time.Millisecond), r.BeatStall.Round(time.Millisecond)), true
		}
		return "", false
	}
	d, ok := r.Latency(stop)
	if !ok || d <= limit || len(r.Left) > 0 || r.Unknown != "" || r.StopCommandOver {
		return "", false
	}
	for _, h := range r.Late {
		if h.Time.Sub(stop) > max(r.Gone, r.Drained)+2*interval {
			return "", false // acted after it was seen gone
		}
	}
	if r.CPUStall < d-limit || r.CPUStall*loadShare < r.Window {
		return "", false
	}
	return fmt.Sprintf("the machine was too loaded to judge the stop time: stopped acting %s after the stop (limit %s) while tasks waited for a CPU, I/O or memory %s of the %s watched (kernel pressure)",
		d.Round(time.Millisecond), limit, r.CPUStall.Round(time.Millisecond), r.Window.Round(time.Millisecond)), true
}

// Latency is when the session stopped acting: the later of its last late
// heartbeat and the moment its processes were gone. ok is false when it
// never stopped within the observation.
func (r StopRun) Latency(stop time.Time) (time.Duration, bool) {
	if r.Gone < 0 {
		return 0, false
	}
	d := r.Gone
	// The latest beat, not the last listed: the lab stamps a hit before it
	// takes the log's lock, so a preempted record can land out of order.
	for _, h := range r.Late {
		if t := h.Time.Sub(stop); t > d {
			d = t
		}
	}
	return d, true
}

// StopSent is one stop as results.json keeps it. LatencyMS is the run's
// Latency; null when it never stopped within the observation.
type StopSent struct {
	Session   string    `json:"session"`
	At        time.Time `json:"at"`
	LatencyMS *float64  `json:"latency_ms"`
}

// Sent is what results.json keeps of the observation's stops.
func (o StopObservation) Sent() []StopSent {
	var out []StopSent
	for i, r := range o.Runs {
		if i >= len(o.Stops) {
			break
		}
		s := StopSent{Session: r.Session, At: o.Stops[i]}
		if d, ok := r.Latency(o.Stops[i]); ok {
			v := ms(d)
			s.LatencyMS = &v
		}
		out = append(out, s)
	}
	return out
}

// StopObservation is what the stop-signal verdict is made from.
type StopObservation struct {
	Limit time.Duration
	// Interval is the heartbeat interval: a heartbeat arriving more than
	// one interval (plus as much again in flight) after a run was seen gone
	// proves it was not.
	Interval time.Duration
	Stops    []time.Time // when each run's stop was sent, by run
	Runs     []StopRun
	Control  bool // the allowed endpoint heard the positive control
	NotReady string
}

// JudgeStop: FAIL when any run kept acting past the limit (a heartbeat
// arrived, a process or its storage remained) or its token still worked;
// PASS only when every run proved its heartbeat from both processes first,
// stopped within the limit on every count, and the positive control worked;
// INCONCLUSIVE otherwise, and for a run whose timing the machine's load
// spoiled (LoadSpoiled). A superseded run counts only for what it left
// or did after it was seen gone. Timings carry p50 and max of the latency.
func JudgeStop(o StopObservation) (Judgement, map[string]float64) {
	var j Judgement
	j.Control = o.Control
	timings := map[string]float64{"stop_limit_ms": ms(o.Limit)}
	var lat []time.Duration
	var fails, gaps []string
	judged := 0
	for i, r := range o.Runs {
		stop := o.Stops[i]
		var hidden []Hit
		for _, h := range r.Late {
			after := h.Time.Sub(stop)
			if after > o.Limit {
				j.Violating = append(j.Violating, h)
			}
			if r.Gone >= 0 && after > max(r.Gone, r.Drained)+2*o.Interval {
				hidden = append(hidden, h)
			}
		}
		d, ok := r.Latency(stop)
		spoiled, isSpoiled := r.LoadSpoiled(stop, o.Limit, o.Interval)
		failed := len(fails)
		unsearched := func() {
			if len(fails) == failed && len(r.Unsearched) > 0 {
				gaps = append(gaps, fmt.Sprintf("run %d (%s): what it left could not be searched: %s", i+1, r.Session, strings.Join(r.Unsearched, "; ")))
			}
		}
		if r.Superseded != "" {
			switch {
			case len(hidden) > 0:
				j.Violating = append(j.Violating, hidden...)
				fails = append(fails, fmt.Sprintf("run %d (%s, measured again: %s) was seen gone %s after the stop, yet %s arrived later: a process nobody could see went on acting",
					i+1, r.Session, r.Superseded, r.Gone.Round(time.Millisecond), strings.Join(lateWho(hidden), ", ")))
			case len(r.Left) > 0:
				fails = append(fails, fmt.Sprintf("run %d (%s, measured again) left %s", i+1, r.Session, strings.Join(r.Left, ", ")))
			case r.TokenChecked && !r.TokenRefused:
				fails = append(fails, fmt.Sprintf("run %d (%s, measured again): the session's broker token still works after stop", i+1, r.Session))
			}
			unsearched()
			continue
		}
		judged++
		switch {
		case len(hidden) > 0:
			j.Violating = append(j.Violating, hidden...)
			fails = append(fails, fmt.Sprintf("run %d (%s) was seen gone %s after the stop, yet %s arrived later, the last %s after the stop: a process nobody could see went on acting",
				i+1, r.Session, r.Gone.Round(time.Millisecond), strings.Join(lateWho(hidden), ", "), hidden[len(hidden)-1].Time.Sub(stop).Round(time.Millisecond)))
		case r.Unknown != "" && len(r.Left) == 0 && len(r.Late) == 0:
			gaps = append(gaps, fmt.Sprintf("run %d (%s): %s", i+1, r.Session, r.Unknown))
		case isSpoiled && ok && d > o.Limit && r.MainBefore && r.ChildBefore:
			gaps = append(gaps, fmt.Sprintf("run %d (%s): %s", i+1, r.Session, spoiled))
		case !ok || d > o.Limit:
			fails = append(fails, fmt.Sprintf("run %d (%s) still acting %s after stop: %s", i+1, r.Session, o.Limit, strings.Join(append(r.Left, lateWho(r.Late)...), ", ")))
		case len(r.Left) > 0:
			fails = append(fails, fmt.Sprintf("run %d (%s) left %s", i+1, r.Session, strings.Join(r.Left, ", ")))
		case r.TokenChecked && !r.TokenRefused:
			fails = append(fails, fmt.Sprintf("run %d (%s): the session's broker token still works after stop", i+1, r.Session))
		}
		unsearched()
		if ok {
			lat = append(lat, d)
			timings[fmt.Sprintf("stop_run%d_ms", i+1)] = ms(d)
		}
		if r.Drained > 0 {
			timings[fmt.Sprintf("stop_run%d_drained_ms", i+1)] = ms(r.Drained)
		}
		if r.WriteWatch > 0 {
			timings[fmt.Sprintf("stop_run%d_write_watch_ms", i+1)] = ms(r.WriteWatch)
		}
		if r.StallKnown {
			// How long tasks waited (CPU, I/O or memory) while the stop was watched:
			// what a reader needs to weigh the latency.
			timings[fmt.Sprintf("stop_run%d_cpu_wait_ms", i+1)] = ms(r.CPUStall)
		}
		if !r.MainBefore || !r.ChildBefore {
			if isSpoiled {
				gaps = append(gaps, fmt.Sprintf("run %d: %s", i+1, spoiled))
			} else {
				gaps = append(gaps, fmt.Sprintf("run %d: no heartbeat from the %s before the stop", i+1, missingWho(r)))
			}
		}
		if !r.TokenChecked {
			gaps = append(gaps, fmt.Sprintf("run %d: the broker token could not be checked", i+1))
		}
	}
	p50, max := percentiles(lat)
	if len(lat) > 0 {
		timings["stop_p50_ms"], timings["stop_max_ms"] = ms(p50), ms(max)
	}
	summary := fmt.Sprintf("stop latency p50 %s, max %s over %d run(s), limit %s", p50.Round(time.Millisecond), max.Round(time.Millisecond), len(lat), o.Limit)
	switch {
	case len(fails) > 0:
		j.Verdict, j.Reason = Fail, strings.Join(fails, "; ")
		if len(lat) > 0 {
			j.Reason += " (" + summary + ")"
		}
	case o.NotReady != "":
		j.Verdict, j.Reason = Inconclusive, "endpoints not ready: "+o.NotReady
	case judged == 0:
		j.Verdict, j.Reason = Inconclusive, "no stop was measured"
	case len(gaps) > 0:
		j.Verdict, j.Reason = Inconclusive, strings.Join(gaps, "; ")
	case !o.Control:
		j.Verdict, j.Reason = Inconclusive, "positive control failed: the allowed endpoint never heard from this session"
	default:
		j.Verdict, j.Reason = Pass, summary+"; heartbeats, processes (incl. the SIGTERM-ignoring one and the escaped child), storage ended, and the token the harness revoked at stop was refused by the lab broker"
	}
	return j, timings
}

func lateWho(hits []Hit) []string {
	if len(hits) == 0 {
		return nil
	}
	n := map[string]int{}
	for _, h := range hits {
		who := "main"
		if strings.Contains(h.Summary, "who=child") {
			who = "escaped child"
		}
		n[who]++
	}
	var out []string
	for who, c := range n {
		out = append(out, fmt.Sprintf("%d heartbeat(s) from the %s after stop", c, who))
	}
	sort.Strings(out)
	return out
}

func missingWho(r StopRun) string {
	switch {
	case !r.MainBefore && !r.ChildBefore:
		return "main process or the escaped child"
	case !r.MainBefore:
		return "main process"
	}
	return "escaped child"
}

func percentiles(ds []time.Duration) (p50, max time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)/2], s[len(s)-1]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
