package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"gatehouse/evidence"
)

// The builtin monitor on docker sessions: a container descends from the
// engine's shim, not from us, so it is watched by the cgroup its processes
// run in (targets/docker/keys.go). Every observable network attempt is
// detected with a latency on docker-leaky (where it got through) and on
// docker-hardened (where the ruleset refused it), the verdicts are the ones
// without a monitor, and nothing of the monitor stays loaded.
func TestBuiltinMonitorOnDockerSessions(t *testing.T) {
	needDocker(t)
	gates := "external-callback,cloud-metadata"
	for _, tt := range []struct {
		profile string
		code    int
		verdict evidence.Verdict
		missPct int // as in TestBuiltinMonitorDetectsTheNetworkAttempts
	}{
		{"docker-leaky.yaml", exitViolation, evidence.Fail, 5},
		{"docker-hardened.yaml", exitOK, evidence.Pass, 5},
	} {
		t.Run(strings.TrimSuffix(tt.profile, ".yaml"), func(t *testing.T) {
			r := runProfile(t, tt.profile, gates, "--monitor", "builtin")
			loadRunFolder(t, &r)
			if r.code != tt.code || len(r.results) != 4 {
				t.Fatalf("exit %d with %d results, want %d and 4\n%s\n%s", r.code, len(r.results), tt.code, r.stdout, r.stderr)
			}
			for _, res := range r.results {
				where := res.Gate + "/" + res.Path
				if res.Verdict != tt.verdict {
					t.Errorf("%s: %s with the monitor, want %s (%s)", where, res.Verdict, tt.verdict, res.Reason)
				}
				d := res.Detection
				if d == nil || !d.Measured {
					t.Fatalf("%s: detection not measured: %+v", where, d)
				}
				observable, missed := 0, 0
				for _, a := range d.Attempts {
					if !a.Observable {
						t.Logf("%s: attempt %s not observable: %s", where, a.ID, a.Reason)
						continue
					}
					observable++
					if a.Detected == nil {
						missed++
						t.Logf("%s: attempt %s (%s %s) not detected: %s", where, a.ID, a.Kind, a.Object, a.Reason)
						continue
					}
					if a.Detected.Source != "builtin" || a.Detected.LatencyMS == nil || *a.Detected.LatencyMS < 0 {
						t.Errorf("%s: attempt %s detected without a latency: %+v", where, a.ID, a.Detected)
					}
				}
				t.Logf("%s: %d of %d observable attempts detected (summary %+v)", where, observable-missed, observable, fmtSummary(d.Summary))
				if observable == 0 || missed*100 > tt.missPct*observable {
					t.Errorf("%s: %d of %d observable attempts not detected", where, missed, observable)
				}
			}
			left := ownLoaded(t)
			for end := time.Now().Add(5 * time.Second); len(left) > 0 && time.Now().Before(end); left = ownLoaded(t) {
				time.Sleep(50 * time.Millisecond)
			}
			if len(left) > 0 {
				t.Errorf("monitor programs still loaded 5 s after the run: %v", left)
			}
			assertNothingLeft(t, r.stdout)
		})
	}
}

// fmtSummary prints a detection summary's figures, not its pointers.
func fmtSummary(s evidence.DetectionSummary) string {
	ms := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return strconv.FormatFloat(*p, 'f', 2, 64) + "ms"
	}
	return fmt.Sprintf("%d/%d observable detected, p50 %s p95 %s", s.Detected, s.Observable, ms(s.P50MS), ms(s.P95MS))
}
