package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/targets/docker"
)

// The builtin monitor on docker sessions: a container descends from the
// engine's shim, not from us, so it is watched by the cgroup its processes
// run in (internal/targets/docker/keys.go). Every observable network attempt is
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

// --respond stop on docker sessions: each scenario's first detection (a
// real attempt of the probe, never the harness's own look inside: see
// Session.applet) is answered, and the effects are measured from outside.
// docker-leaky's stop signals only the exec'd commands (stop_scope
// process), so its container's init outlives the response: said, not
// hidden, as for bwrap-leaky. docker-hardened's stop removes the
// container: its processes are seen gone, with a latency.
func TestRespondStopOnDocker(t *testing.T) {
	needDocker(t)
	for _, tt := range []struct {
		profile string
		codes   []int
		check   func(t *testing.T, where string, res evidence.Result, r evidence.Response)
	}{
		{"docker-leaky.yaml", []int{exitViolation, exitInconclusive}, func(t *testing.T, where string, res evidence.Result, r evidence.Response) {
			// What got out before the response stays out: FAIL. The
			// connect is seen at syscall entry, before its first packet,
			// so the link may be cut before anything arrives: then no
			// proof either way, and the verdict must say the response cut
			// the scenario short (seen once in eight runs here).
			switch {
			case res.Verdict == evidence.Fail:
			case res.Verdict == evidence.Inconclusive && strings.Contains(res.Reason, "the response (--respond)"):
				t.Logf("%s: INCONCLUSIVE, the response came before any forbidden contact arrived: %s", where, res.Reason)
			default:
				t.Errorf("%s: %s with a response (%s), want FAIL, or INCONCLUSIVE naming the response", where, res.Verdict, res.Reason)
			}
			observedAfter(t, where, effectOf(t, r, evidence.EffectTokenRefused), false)
			observedAfter(t, where, effectOf(t, r, evidence.EffectEgressRefused), false)
			notObserved(t, where, effectOf(t, r, evidence.EffectProcessesGone), "still in the session")
		}},
		{"docker-hardened.yaml", []int{exitOK, exitInconclusive}, func(t *testing.T, where string, res evidence.Result, r evidence.Response) {
			if res.Verdict == evidence.Fail {
				t.Errorf("%s: FAIL with a response on the hardened profile: %s", where, res.Reason)
			}
			if res.Verdict == evidence.Inconclusive && !strings.Contains(res.Reason, "the response (--respond)") {
				t.Errorf("%s: INCONCLUSIVE without saying the response cut it short: %s", where, res.Reason)
			}
			observedAfter(t, where, effectOf(t, r, evidence.EffectProcessesGone), false)
			observedAfter(t, where, effectOf(t, r, evidence.EffectEgressRefused), true)
			observedAfter(t, where, effectOf(t, r, evidence.EffectTokenRefused), false)
		}},
	} {
		t.Run(strings.TrimSuffix(tt.profile, ".yaml"), func(t *testing.T) {
			r := runProfile(t, tt.profile, "external-callback", "--monitor", "builtin", "--respond", "stop")
			if !containsInt(tt.codes, r.code) || len(r.results) != 2 {
				t.Fatalf("exit %d with %d results, want one of %v and 2\n%s\n%s", r.code, len(r.results), tt.codes, r.stdout, r.stderr)
			}
			for _, res := range r.results {
				where := res.Gate + "/" + res.Path
				if len(res.Responses) != 1 {
					t.Errorf("%s: %d responses recorded, want one (detection: %s)", where, len(res.Responses), fmtSummary(res.Detection.Summary))
					continue
				}
				resp := res.Responses[0]
				// The trigger is a rule hit on an attempt of the probe
				// (network), not an exec the harness made.
				if resp.Trigger.Source != "builtin" || resp.Trigger.Kind == detect.KindExec || resp.Trigger.Rule == "" || resp.Started.Before(resp.Trigger.Received) {
					t.Errorf("%s: response trigger %+v started %s", where, resp.Trigger, resp.Started)
				}
				if resp.PollMS <= 0 || len(resp.Effects) != 3 {
					t.Errorf("%s: poll %.0fms, %d effects", where, resp.PollMS, len(resp.Effects))
				}
				tt.check(t, where, res, resp)
				for _, e := range resp.Effects {
					t.Logf("%s: %s observed %v latency %s %s", where, e.Effect, e.Observed, msOf(e.LatencyMS), e.Reason)
				}
				for _, n := range resp.Notes {
					t.Logf("%s: note: %s", where, n)
				}
			}
			assertNothingLeft(t, r.stdout)
		})
	}
}

func msOf(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', 1, 64) + "ms"
}

// gVisor under the builtin monitor: the sandbox's syscalls are served by
// runsc's sentry, so a host monitor sees none of them. Every attempt a
// monitor could name is "not observable by this monitor" — never detected,
// never missed — the summary says "not observable", and the verdicts are
// the ones without a monitor.
func TestBuiltinMonitorOnGvisorIsNotObservable(t *testing.T) {
	needDocker(t)
	if _, err := os.Stat(docker.RunscPath); err != nil {
		t.Skip("runsc not installed (scripts/runsc.sh builds it)")
	}
	r := runProfile(t, "gvisor-hardened.yaml", "external-callback,cloud-metadata", "--monitor", "builtin")
	loadRunFolder(t, &r)
	if r.code != exitOK || len(r.results) != 4 {
		t.Fatalf("exit %d with %d results, want %d and 4\n%s\n%s", r.code, len(r.results), exitOK, r.stdout, r.stderr)
	}
	for _, res := range r.results {
		where := res.Gate + "/" + res.Path
		if res.Verdict != evidence.Pass || !res.Control {
			t.Errorf("%s: %s (control %v) with the monitor, want PASS with its control: %s", where, res.Verdict, res.Control, res.Reason)
		}
		d := res.Detection
		if d == nil || !d.Measured {
			t.Fatalf("%s: detection not measured: %+v", where, d)
		}
		named := 0
		for _, a := range d.Attempts {
			if a.Observable || a.Detected != nil {
				t.Errorf("%s: attempt %s (%s %s) observable %v, detected %+v: a host monitor sees nothing inside runsc", where, a.ID, a.Kind, a.Object, a.Observable, a.Detected)
			}
			if a.Kind != "" && strings.Contains(a.Reason, "not observable by this monitor") && strings.Contains(a.Reason, "runsc") {
				named++
			} else if a.Kind != "" && !strings.Contains(a.Reason, "did not resolve") {
				t.Errorf("%s: attempt %s (%s %s): reason %q, want not observable by this monitor (runsc)", where, a.ID, a.Kind, a.Object, a.Reason)
			}
		}
		if named == 0 {
			t.Errorf("%s: no attempt says it is not observable by this monitor", where)
		}
		if d.Summary.Observable != 0 || d.Summary.Detected != 0 {
			t.Errorf("%s: summary %s, want nothing observable", where, fmtSummary(d.Summary))
		}
		if c := evidence.DetectionCell(res); c != "not observable" {
			t.Errorf("%s: DETECTED %q, want \"not observable\"", where, c)
		}
	}
	if !strings.Contains(r.stdout, "not observable") || strings.Contains(r.stdout, "missed") {
		t.Errorf("the summary table does not say not observable (or says missed):\n%s", r.stdout)
	}
	left := ownLoaded(t)
	for end := time.Now().Add(5 * time.Second); len(left) > 0 && time.Now().Before(end); left = ownLoaded(t) {
		time.Sleep(50 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("monitor programs still loaded 5 s after the run: %v", left)
	}
	assertNothingLeft(t, r.stdout)
}
