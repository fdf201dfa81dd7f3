package steps_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/features"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/steps"
	"github.com/gatehouse-dev/gatehouse/internal/steps/steptest"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/fake"
)

// fakeSource is a detect.Source the test feeds.
type fakeSource struct {
	ch      chan detect.Event
	started atomic.Bool
	closed  atomic.Bool
	failing error
}

func newFakeSource() *fakeSource { return &fakeSource{ch: make(chan detect.Event, 1000)} }

func (f *fakeSource) Name() string { return "fake-monitor" }
func (f *fakeSource) Start(ctx context.Context) error {
	if f.failing != nil {
		return f.failing
	}
	f.started.Store(true)
	return nil
}
func (f *fakeSource) Events() <-chan detect.Event { return f.ch }
func (f *fakeSource) Dropped() uint64             { return 0 }
func (f *fakeSource) Close() error                { f.closed.Store(true); return nil }

// watched is a fake sandbox watched by a monitor: each session has a
// cgroup id (gvisor: monitors cannot see inside), and as the probe makes
// each attempt, the monitor reports what emit says of it.
func watched(deliver func(wire.Step) bool, src *fakeSource, emit func(st wire.Step, own uint64) (detect.Event, bool), gvisor bool) *fake.Target {
	cgroup := func(s *fake.Session) uint64 { return 1000 + uint64(s.N()) }
	return &fake.Target{Lab: &steptest.Lab{}, Deliver: deliver,
		KeysFunc: func(_ context.Context, s *fake.Session) ([]detect.SessionKey, error) {
			if gvisor {
				return nil, fmt.Errorf("fake gvisor: %w", targets.ErrNotObservable)
			}
			return []detect.SessionKey{{CgroupID: cgroup(s)}}, nil
		},
		Answer: func(s *fake.Session, st wire.Step) wire.Report {
			if e, ok := emit(st, cgroup(s)); ok {
				src.ch <- e
			}
			return fake.Blocked(st)
		},
	}
}

// The monitor reports: the http attempt from its own session (detected,
// with a latency); the tcp one from another session (not matched); the
// udp one an hour early (outside the window: not matched); the https one
// imported after the fact (detected, latency not measured).
func callbackEvents(st wire.Step, own uint64) (detect.Event, bool) {
	now := time.Now()
	e := detect.Event{Source: "fake-monitor", Rule: "egress", Kind: detect.KindConnect, Key: detect.SessionKey{CgroupID: own}, Received: now, Raw: []byte(`{"raw":1}`)}
	switch st.ID {
	case "http":
		e.Object = "203.0.113.10:80"
	case "tcp":
		e.Object, e.Key = "203.0.113.10:9000", detect.SessionKey{CgroupID: 1}
	case "udp":
		e.Object, e.Received = "203.0.113.10:9001", now.Add(-time.Hour)
	case "https":
		e.Object, e.Received, e.EventTime = "203.0.113.10:443", time.Time{}, now
	default:
		return e, false
	}
	return e, true
}

func runDetecting(t *testing.T, tgt targets.Target, l steps.Lab, src []detect.Source, gates ...string) *steps.Outcome {
	t.Helper()
	out, err := steps.Run(context.Background(), steps.Config{
		Target: tgt, Network: steps.NetLab, Lab: l, ProbePath: "/bin/true",
		Features: features.FS, Gates: gates, Settle: 1, Detectors: src, DetectGrace: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return out
}

func attemptByID(d *evidence.Detection, id string) *evidence.DetectionAttempt {
	for i := range d.Attempts {
		if d.Attempts[i].ID == id {
			return &d.Attempts[i]
		}
	}
	return nil
}

func TestDetectionIsMatchedBySessionKindObjectAndWindow(t *testing.T) {
	src := newFakeSource()
	tgt := watched(onlyControl, src, callbackEvents, false)
	out := runDetecting(t, tgt, labOf(tgt), []detect.Source{src}, "external-callback")
	if !src.started.Load() || !src.closed.Load() {
		t.Errorf("source started %v, closed %v: want both", src.started.Load(), src.closed.Load())
	}
	if len(out.Results) != 2 {
		t.Fatalf("want 2 results, got %d", len(out.Results))
	}
	for _, r := range out.Results {
		d := r.Detection
		if d == nil || !d.Measured {
			t.Fatalf("%s: detection %+v, want measured", r.Path, d)
		}
		http := attemptByID(d, "http")
		if http == nil || http.Detected == nil || http.Detected.LatencyMS == nil || *http.Detected.LatencyMS < 0 || http.Detected.Rule != "egress" {
			t.Errorf("%s: http %+v: want detected by rule egress with a latency", r.Path, http)
		} else if http.Kind != detect.KindConnect || http.Object != "203.0.113.10:80" {
			t.Errorf("%s: http kind/object %s %s", r.Path, http.Kind, http.Object)
		}
		for _, id := range []string{"tcp", "udp"} {
			a := attemptByID(d, id)
			if a == nil || a.Detected != nil || !a.Observable || !strings.Contains(a.Reason, "no detector's event matched") {
				t.Errorf("%s: %s %+v: want observable, not detected (another session's / outside the window)", r.Path, id, a)
			}
		}
		https := attemptByID(d, "https")
		if https == nil || https.Detected == nil || https.Detected.LatencyMS != nil {
			t.Errorf("%s: https %+v: want detected, latency not measured", r.Path, https)
		}
		icmp := attemptByID(d, "icmp")
		if icmp == nil || icmp.Observable || !strings.Contains(icmp.Reason, "no observable object") {
			t.Errorf("%s: icmp %+v: want not observable", r.Path, icmp)
		}
		if p := http.Prevented; r.Verdict == evidence.Pass && (p == nil || !*p) {
			t.Errorf("%s: PASS but http not prevented: %v", r.Path, p)
		}
		if d.Summary.Detected != 2 || d.Summary.P50MS == nil {
			t.Errorf("%s: summary %+v: want 2 detected with a p50", r.Path, d.Summary)
		}
	}
}

func TestGVisorSessionIsNotObservable(t *testing.T) {
	src := newFakeSource()
	tgt := watched(onlyControl, src, callbackEvents, true)
	out := runDetecting(t, tgt, labOf(tgt), []detect.Source{src}, "external-callback")
	for _, r := range out.Results {
		if r.Detection == nil || len(r.Detection.Attempts) == 0 {
			t.Fatalf("%s: no attempts scored: %+v", r.Path, r.Detection)
		}
		for _, a := range r.Detection.Attempts {
			if a.Observable || a.Detected != nil || !strings.Contains(a.Reason, "not observable by this monitor") && !strings.Contains(a.Reason, "no observable object") {
				t.Errorf("%s: %+v: want not observable by this monitor", r.Path, a)
			}
		}
		if r.Detection.Summary.Observable != 0 || evidence.DetectionCell(r) != "not observable" {
			t.Errorf("%s: summary %+v cell %q", r.Path, r.Detection.Summary, evidence.DetectionCell(r))
		}
	}
}

// Without detectors nothing is "missed": detection is not measured. With
// them, every verdict is what it was without.
func TestDetectionNeverChangesVerdicts(t *testing.T) {
	gates := []string{"external-callback", "dns-exfiltration", "cloud-metadata"}
	for _, leaky := range []bool{true, false} {
		deliver := func(s wire.Step) bool { return leaky || s.ID == "positive-control" }
		plain := &fake.Target{Lab: &steptest.Lab{}, Deliver: deliver}
		without := runFake(t, plain, gates...)
		for _, r := range without.Results {
			if r.Detection == nil || r.Detection.Measured || r.Detection.Reason != evidence.NotMeasured || evidence.DetectionCell(r) != "not measured" {
				t.Errorf("no detectors: %s/%s detection %+v, want not measured", r.Gate, r.Path, r.Detection)
			}
		}
		src := newFakeSource()
		// The monitor sees every attempt of every session.
		all := func(st wire.Step, own uint64) (detect.Event, bool) {
			e, ok := callbackEvents(st, own)
			if ok {
				e.Key, e.Received = detect.SessionKey{CgroupID: own}, time.Now()
			}
			return e, ok
		}
		kt := watched(deliver, src, all, false)
		with := runDetecting(t, kt, labOf(kt), []detect.Source{src}, gates...)
		a, b := verdicts(without), verdicts(with)
		if len(a) != 6 || fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("leaky=%v: verdicts without detection %v, with %v", leaky, a, b)
		}
		for _, r := range with.Results {
			if r.Detection == nil || !r.Detection.Measured {
				t.Errorf("%s/%s: detection not measured with a detector", r.Gate, r.Path)
			}
			if leaky && r.Gate == "external-callback" {
				if h := attemptByID(r.Detection, "http"); h == nil || (h.Prevented != nil && *h.Prevented) || h.Detected == nil {
					t.Errorf("%s/%s leaky: http %+v: want detected and never called prevented", r.Gate, r.Path, h)
				}
			}
		}
	}
}

func TestDetectorThatCannotStartStopsTheRun(t *testing.T) {
	src := newFakeSource()
	src.failing = errors.New("no BPF here")
	tgt := &fake.Target{Lab: &steptest.Lab{}, Deliver: func(wire.Step) bool { return true }}
	_, err := steps.Run(context.Background(), steps.Config{Target: tgt, Network: steps.NetLab, Lab: labOf(tgt), ProbePath: "/bin/true",
		Features: features.FS, Gates: []string{"external-callback"}, Settle: 1, Detectors: []detect.Source{src}})
	if err == nil || !strings.Contains(err.Error(), "no BPF here") {
		t.Fatalf("err = %v, want the source's refusal", err)
	}
}

// A monitor's exit records (detect.KindExit) carry the session's key and
// arrive inside the attempts' windows, even with an attempt's very object:
// none is matched to an attempt as its detection.
func TestExitEventsAreNeverDetections(t *testing.T) {
	src := newFakeSource()
	asExit := func(st wire.Step, own uint64) (detect.Event, bool) {
		e, ok := callbackEvents(st, own)
		if !ok || st.ID != "http" {
			return e, false
		}
		e.Kind, e.Rule = detect.KindExit, ""
		return e, true
	}
	tgt := watched(onlyControl, src, asExit, false)
	out := runDetecting(t, tgt, labOf(tgt), []detect.Source{src}, "external-callback")
	if len(out.Results) != 2 {
		t.Fatalf("want 2 results, got %d", len(out.Results))
	}
	for _, r := range out.Results {
		d := r.Detection
		if d == nil || !d.Measured {
			t.Fatalf("%s: detection %+v, want measured", r.Path, d)
		}
		http := attemptByID(d, "http")
		if http == nil || !http.Observable || http.Object != "203.0.113.10:80" {
			t.Fatalf("%s: http %+v: want an observable connect to 203.0.113.10:80", r.Path, http)
		}
		for _, a := range d.Attempts {
			if a.Detected != nil {
				t.Errorf("%s: %s detected by %+v: an exit is no detection", r.Path, a.ID, a.Detected)
			}
		}
	}
}
