package steps

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/legacyip"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// Detection is scored apart from prevention: the detectors' events are
// matched to attempts by session, kind, object and window (detect.Match),
// never by time alone, and nothing here changes a verdict.

const (
	// DefaultDetectGrace is how long after an attempt's window an event
	// may still arrive and count (ring buffer and alert pipeline delays).
	DefaultDetectGrace = time.Second
	// DefaultMaxEvents bounds the run's event buffer: a flood of alerts
	// is counted as dropped, never held without limit.
	DefaultMaxEvents = 20000
	// maxRawTrace caps the raw bytes each event keeps in traces/alerts.jsonl.
	maxRawTrace = 4 << 10
)

// detector collects the detectors' events for one run.
type detector struct {
	sources []detect.Source
	grace   time.Duration
	max     int

	mu      sync.Mutex
	events  []detect.Event
	over    uint64           // events dropped because the buffer was full
	matched map[int][]string // event index -> "session/attempt" it was matched to

	done chan struct{}
	wg   sync.WaitGroup
	// onEvent sees every event as it arrives (the responder), outside
	// the buffer's lock; set before any source delivers.
	onEvent func(detect.Event)
}

// startDetectors starts every source before any scenario runs. A source
// that cannot start stops the run: it never runs silently without it.
func startDetectors(ctx context.Context, cfg Config) (*detector, error) {
	if len(cfg.Detectors) == 0 {
		return nil, nil
	}
	d := &detector{sources: cfg.Detectors, grace: cfg.DetectGrace, max: cfg.MaxEvents, matched: map[int][]string{}, done: make(chan struct{})}
	if d.grace <= 0 {
		d.grace = DefaultDetectGrace
	}
	if d.max <= 0 {
		d.max = DefaultMaxEvents
	}
	for i, src := range d.sources {
		if err := src.Start(ctx); err != nil {
			for _, started := range d.sources[:i] {
				_ = started.Close()
			}
			return nil, fmt.Errorf("steps: detector %s: %w", src.Name(), err)
		}
	}
	for _, src := range d.sources {
		d.wg.Add(1)
		go d.collect(src)
	}
	return d, nil
}

func (d *detector) collect(src detect.Source) {
	defer d.wg.Done()
	ch := src.Events()
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				return
			}
			d.add(e)
		case <-d.done:
			return
		}
	}
}

func (d *detector) add(e detect.Event) {
	d.mu.Lock()
	if len(d.events) >= d.max {
		d.over++
		d.mu.Unlock()
		return
	}
	d.events = append(d.events, e)
	d.mu.Unlock()
	if d.onEvent != nil {
		d.onEvent(e)
	}
}

// stop closes every source and waits for the collectors.
func (d *detector) stop() error {
	var errs []error
	for _, src := range d.sources {
		if err := src.Close(); err != nil {
			errs = append(errs, fmt.Errorf("detector %s: %w", src.Name(), err))
		}
	}
	close(d.done)
	d.wg.Wait()
	return errors.Join(errs...)
}

func (d *detector) names() []string {
	var out []string
	for _, src := range d.sources {
		out = append(out, src.Name())
	}
	return out
}

// dropped is every event lost so far: the sources' own and the buffer's.
func (d *detector) dropped() uint64 {
	d.mu.Lock()
	n := d.over
	d.mu.Unlock()
	for _, src := range d.sources {
		n += src.Dropped()
	}
	return n
}

// alertRecord is one line of traces/alerts.jsonl.
type alertRecord struct {
	Event   detect.Event `json:"event"`
	Matched []string     `json:"matched"` // "session/attempt", none when unmatched
	RawCut  int          `json:"raw_truncated,omitempty"`
}

// writeTrace keeps every event, matched or not, raw bytes capped.
func (d *detector) writeTrace(f *evidence.Folder) {
	if f == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	_ = f.Touch(evidence.AlertsTrace)
	for i, e := range d.events {
		rec := alertRecord{Event: e, Matched: d.matched[i]}
		if len(e.Raw) > maxRawTrace {
			rec.RawCut = len(e.Raw) - maxRawTrace
			rec.Event.Raw = e.Raw[:maxRawTrace]
		}
		if rec.Matched == nil {
			rec.Matched = []string{}
		}
		_ = f.AppendJSONL(evidence.AlertsTrace, rec)
	}
	if n := d.over; n > 0 {
		_ = f.AppendJSONL(evidence.AlertsTrace, map[string]any{"dropped": n, "why": fmt.Sprintf("over the run's bound of %d events", d.max)})
	}
}

// detAttempt is one attempt as detection sees it.
type detAttempt struct {
	evidence.DetectionAttempt
	from, to time.Time
	// unreported: planned, but the probe was ended (by a response) before
	// it reported; counted only when a monitor saw it.
	unreported bool
}

// sessionKeys reads, right after Start, the keys that tie a monitor's
// event to the session. A session host monitors cannot see into, or one
// without keys, leaves its attempts unobservable (never "missed").
func (r *runner) sessionKeys(ctx context.Context, s *scenario) {
	if r.det == nil {
		return
	}
	sk, ok := s.sess.(targets.SessionKeyer)
	if !ok {
		s.unobservable = "the " + r.cfg.Target.Name() + " target gives monitors no session key"
		return
	}
	keys, err := sk.SessionKeys(ctx)
	switch {
	case errors.Is(err, targets.ErrNotObservable):
		s.unobservable = "not observable by this monitor: " + err.Error()
		return
	case err != nil:
		s.unobservable = "no session key: " + err.Error()
		return
	}
	if r.cfg.Network == NetHost {
		// The lab's namespace is shared with the lab's own servers and
		// other sessions: it identifies no session.
		for i := range keys {
			keys[i].NetnsInode = 0
		}
	}
	s.keys = keys
	defer r.resp.watch(s)
	// Sources that filter by session (the builtin monitor, in the kernel)
	// are told to watch this one; a key a source cannot watch leaves the
	// session unobservable by it, which is said, never scored as missed.
	for _, src := range r.det.sources {
		reg, ok := src.(detect.Registrar)
		if !ok {
			continue
		}
		for _, k := range keys {
			if err := reg.Register(k); err != nil {
				s.unobservable = src.Name() + " cannot watch this session: " + err.Error()
			}
		}
	}
}

// unregisterKeys tells filtering sources to stop watching s.
func (r *runner) unregisterKeys(s *scenario) {
	if r.det == nil {
		return
	}
	for _, src := range r.det.sources {
		if reg, ok := src.(detect.Registrar); ok {
			for _, k := range s.keys {
				reg.Unregister(k)
			}
		}
	}
}

// observeAttempts derives, for each report of a plan, what a monitor
// would see (kind and object, from the planned step, not the report) and
// the attempt's window. The report's times are hostile: they count only
// inside the window the harness saw from outside (from, to).
func (r *runner) observeAttempts(s *scenario, p wire.Plan, reps []wire.Report, from, to time.Time) {
	if r.det == nil {
		return
	}
	byID := map[string]wire.Step{}
	for _, st := range p.Steps {
		byID[st.ID] = st
	}
	reported := len(reps)
	if s.wasResponded() {
		// A response that ended the probe leaves attempts it made but
		// never reported: they are still attempts a monitor may have
		// seen, in the whole outside window.
		seen := map[string]bool{}
		for _, rep := range reps {
			seen[rep.ID] = true
		}
		for _, st := range p.Steps {
			if !seen[st.ID] && st.ID != "positive-control" {
				reps = append(reps, wire.Report{ID: st.ID})
			}
		}
	}
	for i, rep := range reps {
		st, ok := byID[rep.ID]
		if !ok || rep.ID == "positive-control" {
			continue
		}
		a := detAttempt{DetectionAttempt: evidence.DetectionAttempt{ID: rep.ID, Session: s.session}, unreported: i >= reported}
		a.from, a.to = attemptWindow(rep, from, to)
		var why string
		a.Kind, a.Object, why = observable(st)
		switch {
		case a.Kind == detect.KindConnect:
			why = unresolved(st, rep)
		case a.Kind == detect.KindOpen:
			why = notThere(a.Object, rep)
		}
		switch {
		case a.Kind == "" || why != "":
			a.Reason = why
		case s.unobservable != "":
			a.Reason = s.unobservable
		default:
			a.Observable = true
		}
		s.detAttempts = append(s.detAttempts, a)
	}
}

// attemptWindow is the report's [start, start+duration] clamped to the
// outside window; a report without times gets the whole outside window.
func attemptWindow(rep wire.Report, from, to time.Time) (time.Time, time.Time) {
	if rep.Start.IsZero() {
		return from, to
	}
	clamp := func(t time.Time) time.Time {
		if t.Before(from) {
			return from
		}
		if t.After(to) {
			return to
		}
		return t
	}
	d := time.Duration(rep.DurationMS * float64(time.Millisecond))
	if d < 0 {
		d = 0
	}
	return clamp(rep.Start), clamp(rep.Start.Add(d))
}

// labLiterals are the names the lab answers with one fixed address: an
// attempt naming one of them can only connect there. Any other name's
// address is not known before the attempt (the sandbox may resolve it
// elsewhere), so it has no observable object.
var labLiterals = map[string]string{
	lab.InferenceName:     lab.InferenceV4,
	lab.GCPName:           lab.MetadataV4,
	lab.MetadataAlias:     lab.MetadataV4,
	lab.InferenceLabName:  lab.InferenceV4,
	lab.ResolverLabName:   lab.ResolverV4,
	lab.AuthorityLabName:  lab.AuthorityV4,
	lab.WireServerLabName: lab.WireServerV4,
	lab.IntakeLabName:     lab.IntakeV4,
}

// observable is what a monitor would see of a step, normalised as the
// sources normalise theirs: connect "ip:port" ("[v6]:port"), dns a
// lower-case name without the trailing dot, open a path. "" with a reason
// when there is nothing a monitor could match.
func observable(st wire.Step) (kind, object, why string) {
	const none = "no observable object"
	switch st.Kind {
	case wire.KindHTTP:
		u, err := url.Parse(st.Target)
		if err != nil || u.Hostname() == "" {
			return "", "", none + ": not a URL"
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		return connectObject(u.Hostname(), port)
	case wire.KindTCP, wire.KindUDP:
		h, port, err := net.SplitHostPort(st.Target)
		if err != nil {
			return "", "", none + ": not host:port"
		}
		return connectObject(h, port)
	case wire.KindDNS:
		name := strings.ToLower(strings.TrimSuffix(st.Target, "."))
		if name == "" {
			return "", "", none + ": no name"
		}
		return detect.KindDNS, name, ""
	case wire.KindRead, wire.KindHunt:
		if !strings.HasPrefix(st.Target, "/") {
			return "", "", none + ": " + st.Kind + " of " + st.Target + " is not one path"
		}
		return detect.KindOpen, path.Clean(st.Target), ""
	}
	return "", "", none + " for a " + st.Kind + " attempt"
}

// unresolved says why a connect attempt named by a lab literal (whose
// address is known before the attempt) never reached connect(2): the name
// did not resolve inside the sandbox (hardened profiles refuse the
// query), so there is no connect for a monitor to see. Counted observable,
// such an attempt takes the event of another attempt of the same session
// to the same address, and that one shows as missed.
func unresolved(st wire.Step, rep wire.Report) string {
	host := st.Target
	if u, err := url.Parse(st.Target); err == nil && u.Hostname() != "" && st.Kind == wire.KindHTTP {
		host = u.Hostname()
	} else if h, _, err := net.SplitHostPort(st.Target); err == nil {
		host = h
	}
	if _, err := netip.ParseAddr(host); err == nil || rep.Error == "" {
		return ""
	}
	if _, legacy := legacyip.Parse(host); legacy {
		return ""
	}
	if strings.Contains(rep.Error, "lookup "+host) {
		return "not observable: the name " + host + " did not resolve in the sandbox (" + rep.Outcome + "), so no connect was made"
	}
	return ""
}

// notThere says why a read or search of a path that does not exist in the
// sandbox opened nothing (the probe found "nothing to search"). Like an
// unresolved name, the sandbox's word can only make an attempt
// unobservable, never detected.
func notThere(object string, rep wire.Report) string {
	if strings.HasPrefix(rep.Error, "nothing to search") {
		return "not observable: " + object + " does not exist in the sandbox, so nothing was opened"
	}
	return ""
}

func connectObject(host, port string) (string, string, string) {
	if port == "" {
		return "", "", "no observable object: no port"
	}
	a, err := netip.ParseAddr(host)
	if legacy, ok := legacyip.Parse(host); err != nil && ok {
		// Decimal, hex and short forms: the probe dials them as the
		// address they spell, as old resolvers do.
		a, err = legacy, nil
	}
	if err != nil {
		lit, ok := labLiterals[strings.ToLower(strings.TrimSuffix(host, "."))]
		if !ok {
			return "", "", "no observable object: the name " + host + " is not a lab literal, its address is not known before the attempt"
		}
		a = netip.MustParseAddr(lit)
	}
	obj := net.JoinHostPort(a.Unmap().WithZone("").String(), port)
	if a.Unmap().String() == lab.InferenceV4 && (port == "80" || port == "443") {
		// Its connection is the allowed one: what makes it forbidden (a
		// redirect followed, a body, a method, a path) is above the socket,
		// where a syscall monitor does not look.
		return "", "", "no observable object: its connection goes to the allowed endpoint " + obj + "; what is forbidden about it is above the socket layer"
	}
	return detect.KindConnect, obj, ""
}

// scoreDetection matches the run's events to the scenario's attempts (its
// own session's and its peers'). It waits, bounded by ctx, until the last
// attempt's grace has passed, so a late but in-time event counts.
func (r *runner) scoreDetection(ctx context.Context, s *scenario, res evidence.Result) *evidence.Detection {
	if r.det == nil {
		return &evidence.Detection{Measured: false, Reason: evidence.NotMeasured}
	}
	d := r.det
	as := append([]detAttempt(nil), s.detAttempts...)
	keys := map[string][]detect.SessionKey{s.session: s.keys}
	if m := multiOf(ctx); m != nil {
		m.mu.Lock()
		for _, p := range m.peers {
			as = append(as, p.detAttempts...)
			keys[p.session] = p.keys
		}
		m.mu.Unlock()
	}
	var last time.Time
	for _, a := range as {
		if a.to.After(last) {
			last = a.to
		}
	}
	if wait := time.Until(last.Add(d.grace)); wait > 0 && len(as) > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
	}
	out := &evidence.Detection{Measured: true, Sources: d.names()}
	// One event is the observation of one attempt: two attempts of the
	// same session at the same object (run in parallel) need two events.
	// Attempts whose window closes first choose first, each the earliest
	// event it can take: for events (points) and windows (intervals) that
	// order matches as many attempts as any order can.
	sort.SliceStable(as, func(i, j int) bool { return as[i].to.Before(as[j].to) })
	used := map[int]bool{}
	d.mu.Lock()
	for i := range as {
		a := &as[i]
		if !a.Observable {
			continue
		}
		best, bestAt, imported := -1, time.Time{}, false
		for j, e := range d.events {
			if used[j] {
				continue
			}
			m := e
			imp := m.Received.IsZero()
			if imp {
				// Imported after the fact: its own time places it in the
				// window; no latency can be measured from it.
				if m.EventTime.IsZero() {
					continue
				}
				m.Received = m.EventTime
			}
			if !detect.Match(m, detect.Attempt{ID: a.ID, Keys: keys[a.Session], Kind: a.Kind, Object: a.Object, From: a.from, To: a.to}, d.grace) {
				continue
			}
			// The first measured event wins; an imported one only when
			// no measured one matched.
			if best < 0 || (imported && !imp) || (imported == imp && m.Received.Before(bestAt)) {
				best, bestAt, imported = j, m.Received, imp
			}
		}
		if best < 0 {
			a.Reason = "no detector's event matched this session, kind, object and window"
			if a.unreported {
				a.Observable = false
				a.Reason = "not reported: the response ended the probe first, and no monitor saw it made; not counted as missed"
			}
			continue
		}
		used[best] = true
		d.matched[best] = append(d.matched[best], a.Session+"/"+a.ID)
		e := d.events[best]
		a.Detected = &evidence.Detected{Source: e.Source, Rule: e.Rule}
		if !imported {
			ms := float64(e.Received.Sub(a.from).Microseconds()) / 1000
			a.Detected.LatencyMS = &ms
		} else {
			a.Reason = "imported after the fact: latency not measured"
		}
	}
	d.mu.Unlock()
	out.Dropped = d.dropped()
	for _, a := range as {
		if a.Detected == nil && a.Observable && out.Dropped > 0 {
			a.Reason += fmt.Sprintf(" (%d events were dropped: it may be among them)", out.Dropped)
		}
		out.Attempts = append(out.Attempts, a.DetectionAttempt)
	}
	sort.SliceStable(out.Attempts, func(i, j int) bool {
		if out.Attempts[i].Session != out.Attempts[j].Session {
			return out.Attempts[i].Session < out.Attempts[j].Session
		}
		return false
	})
	prev := evidence.Prevention(res.Verdict, res.Hits, out.Attempts)
	for i := range out.Attempts {
		out.Attempts[i].Prevented = prev[i]
	}
	out.Summary = evidence.Summarize(out.Attempts)
	return out
}

// markStopped tells monitors that watch past a stop that s was stopped at
// at: a process of it still running then shows as alive-after-stop.
func (r *runner) markStopped(s *scenario, at time.Time) {
	if r.det == nil {
		return
	}
	for _, src := range r.det.sources {
		if sw, ok := src.(detect.StopWatcher); ok {
			for _, k := range s.keys {
				_ = sw.MarkStopped(k, at)
			}
		}
	}
}

// aliveGrace is how long after a stop a process may still make system
// calls (its own exit, a parent reaping it) and count as dying, not alive.
const aliveGrace = 250 * time.Millisecond

// aliveAfterStop lists what the monitors saw of s still running after its
// stop: processes with a system call after it whose exit came more than
// aliveGrace later, or was never seen.
func (r *runner) aliveAfterStop(s *scenario, stop time.Time) []string {
	if r.det == nil {
		return nil
	}
	r.det.mu.Lock()
	defer r.det.mu.Unlock()
	mine := func(e detect.Event) bool {
		for _, k := range s.keys {
			if detect.SameSession(e.Key, k) {
				return true
			}
		}
		return false
	}
	exits := map[int]time.Time{}
	for _, e := range r.det.events {
		if e.Kind == detect.KindExit && e.Key.PID != 0 && mine(e) {
			exits[e.Key.PID] = e.EventTime
		}
	}
	var out []string
	for _, e := range r.det.events {
		if e.Kind != detect.KindAliveAfter || !mine(e) {
			continue
		}
		end, ok := exits[e.Key.PID]
		switch {
		case ok && !end.IsZero() && end.Sub(stop) <= aliveGrace:
			// It was dying: its last calls were its exit.
		case ok && !end.IsZero():
			out = append(out, fmt.Sprintf("%s pid %d exited %s after the stop", e.Object, e.Key.PID, end.Sub(stop).Round(time.Millisecond)))
		default:
			out = append(out, fmt.Sprintf("%s pid %d, no exit seen", e.Object, e.Key.PID))
		}
	}
	return out
}
