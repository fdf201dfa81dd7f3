package main

import (
	"testing"
	"time"

	"gatehouse/evidence"
	"gatehouse/monitor"
)

// The builtin monitor, on a real run: every observable network attempt is
// detected with a latency on bwrap-leaky (where it got through) and on
// bwrap-hardened (where it was blocked: attempted, prevented, detected),
// the verdicts are the ones without a monitor, and nothing of the monitor
// stays loaded after the run.
func TestBuiltinMonitorDetectsTheNetworkAttempts(t *testing.T) {
	needSandbox(t)
	gates := "external-callback,dns-exfiltration,cloud-metadata"
	for _, tt := range []struct {
		profile string
		code    int
		verdict evidence.Verdict
	}{
		{"bwrap-leaky.yaml", exitViolation, evidence.Fail},
		{"bwrap-hardened.yaml", exitOK, evidence.Pass},
	} {
		t.Run(tt.profile, func(t *testing.T) {
			r := runProfile(t, tt.profile, gates, "--monitor", "builtin")
			loadRunFolder(t, &r)
			if r.code != tt.code || len(r.results) != 6 {
				t.Fatalf("exit %d with %d results, want %d and 6\n%s\n%s", r.code, len(r.results), tt.code, r.stdout, r.stderr)
			}
			for _, res := range r.results {
				if res.Verdict != tt.verdict {
					t.Errorf("%s/%s: %s with the monitor, want %s", res.Gate, res.Path, res.Verdict, tt.verdict)
				}
				d := res.Detection
				if d == nil || !d.Measured {
					t.Fatalf("%s/%s: detection not measured: %+v", res.Gate, res.Path, d)
				}
				observable := 0
				for _, a := range d.Attempts {
					if !a.Observable {
						continue
					}
					observable++
					if a.Detected == nil || a.Detected.Source != "builtin" || a.Detected.LatencyMS == nil || *a.Detected.LatencyMS < 0 {
						t.Errorf("%s/%s: attempt %s (%s %s) not detected with a latency: %+v (%s)", res.Gate, res.Path, a.ID, a.Kind, a.Object, a.Detected, a.Reason)
					}
				}
				if observable == 0 {
					t.Errorf("%s/%s: no observable attempt", res.Gate, res.Path)
				}
			}
			// The kernel frees a closed program a moment later (RCU).
			left := monitor.Loaded()
			for end := time.Now().Add(5 * time.Second); len(left) > 0 && time.Now().Before(end); left = monitor.Loaded() {
				time.Sleep(50 * time.Millisecond)
			}
			if len(left) > 0 {
				t.Errorf("monitor programs still loaded 5 s after the run: %v", left)
			}
		})
	}
}
