package steps_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/features"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/steps"
	"github.com/gatehouse-dev/gatehouse/targets/fake"
)

func runResponding(t *testing.T, tgt *fake.Target, src *fakeSource, resp *steps.Response) *steps.Outcome {
	t.Helper()
	out, err := steps.Run(context.Background(), steps.Config{
		Target: tgt, Network: steps.NetLab, Lab: labOf(tgt), ProbePath: "/bin/true",
		Features: features.FS, Gates: []string{"external-callback"}, Settle: 1,
		Detectors: []detect.Source{src}, DetectGrace: 200 * time.Millisecond, Respond: resp,
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return out
}

// Each session's first rule hit is answered once, with the trigger, the
// hook's outcome and every effect said (here none can be observed: the
// fake lab has no link to cut, no broker, no process list); an exit record
// or an event of another session never triggers; the verdict is the same
// as without a response.
func TestResponseAnswersEachSessionsFirstDetectionOnce(t *testing.T) {
	marks := filepath.Join(t.TempDir(), "hook-runs")
	hook := filepath.Join(t.TempDir(), "hook.sh")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho \"$GATEHOUSE_SESSION\" >> "+marks+"\necho isolated\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		emit      func(wire.Step, uint64) (detect.Event, bool)
		responses int
	}{
		{"rule hits", callbackEvents, 1},
		{"exits only", func(st wire.Step, own uint64) (detect.Event, bool) {
			return detect.Event{Source: "fake-monitor", Rule: "exit", Kind: "exit", Object: "1", Key: detect.SessionKey{CgroupID: own}, Received: time.Now()}, st.ID == "http"
		}, 0},
		{"another session's", func(st wire.Step, own uint64) (detect.Event, bool) {
			return detect.Event{Source: "fake-monitor", Rule: "egress", Kind: detect.KindConnect, Object: "203.0.113.10:80", Key: detect.SessionKey{CgroupID: 1}, Received: time.Now()}, st.ID == "http"
		}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_ = os.Remove(marks)
			ptgt := watched(onlyControl, newFakeSource(), tt.emit, false)
			plain := runDetecting(t, ptgt, labOf(ptgt), nil, "external-callback")
			src := newFakeSource()
			tgt := watched(onlyControl, src, tt.emit, false)
			out := runResponding(t, tgt, src, &steps.Response{Hook: []string{hook}, Limit: 100 * time.Millisecond})
			if got, want := verdicts(out), verdicts(plain); len(got) != 2 || got["external-callback/normal"] != want["external-callback/normal"] || got["external-callback/assume-breach"] != want["external-callback/assume-breach"] {
				t.Errorf("verdicts with a response %v, without %v", got, want)
			}
			runs, _ := os.ReadFile(marks)
			if n := strings.Count(string(runs), "\n"); n != tt.responses*len(out.Results) {
				t.Errorf("hook ran %d times, want %d:\n%s", n, tt.responses*len(out.Results), runs)
			}
			for _, r := range out.Results {
				if len(r.Responses) != tt.responses {
					t.Fatalf("%s: %d responses, want %d: %+v", r.Path, len(r.Responses), tt.responses, r.Responses)
				}
				for _, resp := range r.Responses {
					if resp.Session != r.Session || resp.Trigger.Rule != "egress" || resp.Mode != "exec:"+hook {
						t.Errorf("%s: response %+v", r.Path, resp)
					}
					if resp.Hook == nil || resp.Hook.Exit != 0 || !strings.Contains(resp.Hook.Output, "isolated") {
						t.Errorf("%s: hook %+v", r.Path, resp.Hook)
					}
					for _, e := range resp.Effects {
						if e.Observed || e.LatencyMS != nil || e.Reason == "" {
							t.Errorf("%s: %s observed without a way to see it: %+v", r.Path, e.Effect, e)
						}
						if e.Effect == evidence.EffectEgressRefused && e.Reason != "not measured: the lab cannot check a session's egress" {
							t.Errorf("%s: egress effect %q: want it not measured, the lab's missing check said", r.Path, e.Reason)
						}
					}
					if c := evidence.ResponseCell(r); c != "gone no, egress -, token -" {
						t.Errorf("%s: cell %q", r.Path, c)
					}
				}
			}
		})
	}
}

// A response needs a detector and a way to respond.
func TestResponseConfigRefused(t *testing.T) {
	src := newFakeSource()
	tgt := watched(func(wire.Step) bool { return false }, src, callbackEvents, false)
	for _, cfg := range []steps.Config{
		{Target: tgt, Network: steps.NetLab, Lab: labOf(tgt), Features: features.FS, Respond: &steps.Response{Stop: true}},
		{Target: tgt, Network: steps.NetLab, Lab: labOf(tgt), Features: features.FS, Detectors: []detect.Source{src}, Respond: &steps.Response{}},
	} {
		if _, err := steps.Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "respon") {
			t.Errorf("run with %+v: err %v, want a refusal", cfg.Respond, err)
		}
	}
}
