package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// effectOf finds one effect of a response.
func effectOf(t *testing.T, r evidence.Response, name string) evidence.ResponseEffect {
	t.Helper()
	for _, e := range r.Effects {
		if e.Effect == name {
			return e
		}
	}
	t.Fatalf("response of %s has no %s effect: %+v", r.Session, name, r.Effects)
	return evidence.ResponseEffect{}
}

func observedAfter(t *testing.T, where string, e evidence.ResponseEffect, before bool) {
	t.Helper()
	if !e.Observed || e.LatencyMS == nil || *e.LatencyMS < 0 || e.Before != before {
		t.Errorf("%s: %s: want observed with a latency (already before the response: %v), got %+v", where, e.Effect, before, e)
	}
}

func notObserved(t *testing.T, where string, e evidence.ResponseEffect, why string) {
	t.Helper()
	if e.Observed || e.LatencyMS != nil || !strings.Contains(e.Reason, why) {
		t.Errorf("%s: %s: want not observed (%q), got %+v", where, e.Effect, why, e)
	}
}

// --respond on real runs: each session's first detection is answered and
// the effects are measured from outside, each on its own, never taken from
// the response's word; the verdict stays what the sandbox let happen.
func TestRespondToDetections(t *testing.T) {
	needSandbox(t)
	hook := filepath.Join("testdata", "respond-kill.sh")
	for _, tt := range []struct {
		name, profile, respond string
		codes                  []int
		check                  func(t *testing.T, where string, res evidence.Result, r evidence.Response)
	}{
		{
			// Token revoked and link cut at once; the leaky profile's own
			// stop signals only the commands' process groups, so the
			// sandbox's init outlives it: said, not hidden.
			name: "leaky stop", profile: "bwrap-leaky.yaml", respond: "stop", codes: []int{exitViolation},
			check: func(t *testing.T, where string, res evidence.Result, r evidence.Response) {
				// A response fast enough to stop the session before anything
				// of it got out leaves nothing proven: INCONCLUSIVE, saying
				// so. Otherwise what got out before it stays out: FAIL. (At
				// least one path must FAIL: checked after the loop.)
				cutFirst := res.Verdict == evidence.Inconclusive && strings.Contains(res.Reason, "the response (--respond) acted on the session before every attempt had been tried")
				if res.Verdict != evidence.Fail && !cutFirst {
					t.Errorf("%s: %s with a response, want FAIL: what got out before it stays out\nreason: %s\nfindings: %q", where, res.Verdict, res.Reason, res.Findings)
				}
				observedAfter(t, where, effectOf(t, r, evidence.EffectTokenRefused), false)
				observedAfter(t, where, effectOf(t, r, evidence.EffectEgressRefused), false)
				notObserved(t, where, effectOf(t, r, evidence.EffectProcessesGone), "still in the session")
			},
		},
		{
			// Everything is blocked before the response: egress refused
			// already; the stop ends every process of the session.
			name: "hardened stop", profile: "bwrap-hardened.yaml", respond: "stop", codes: []int{exitOK, exitInconclusive},
			check: func(t *testing.T, where string, res evidence.Result, r evidence.Response) {
				if res.Verdict == evidence.Fail {
					t.Errorf("%s: FAIL with a response on the hardened profile: %s", where, res.Reason)
				}
				if res.Verdict == evidence.Inconclusive && !strings.Contains(res.Reason, "the response (--respond)") {
					t.Errorf("%s: INCONCLUSIVE without saying the response cut it short: %s", where, res.Reason)
				}
				observedAfter(t, where, effectOf(t, r, evidence.EffectProcessesGone), false)
				observedAfter(t, where, effectOf(t, r, evidence.EffectEgressRefused), true)
				observedAfter(t, where, effectOf(t, r, evidence.EffectTokenRefused), false)
			},
		},
		{
			// A team's hook that only kills the session's processes: the
			// network and the token stay as they were, and that is seen.
			name: "leaky hook", profile: "bwrap-leaky.yaml", respond: "exec:" + hook, codes: []int{exitViolation, exitInconclusive},
			check: func(t *testing.T, where string, res evidence.Result, r evidence.Response) {
				if res.Verdict == evidence.Pass {
					t.Errorf("%s: PASS on the leaky profile with a hook", where)
				}
				if r.Hook == nil || r.Hook.Exit != 0 || !strings.Contains(r.Hook.Output, "killed "+r.Session) {
					t.Errorf("%s: hook run %+v, want exit 0 and its output", where, r.Hook)
				}
				observedAfter(t, where, effectOf(t, r, evidence.EffectProcessesGone), false)
				notObserved(t, where, effectOf(t, r, evidence.EffectEgressRefused), "not observed within")
				notObserved(t, where, effectOf(t, r, evidence.EffectTokenRefused), "not observed within")
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runProfile(t, tt.profile, "external-callback", "--monitor", "builtin", "--respond", tt.respond)
			if !containsInt(tt.codes, r.code) || len(r.results) != 2 {
				t.Fatalf("exit %d with %d results, want one of %v and 2\n%s\n%s", r.code, len(r.results), tt.codes, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, "RESPONSE") {
				t.Errorf("the summary has no RESPONSE column:\n%s", r.stdout)
			}
			if tt.respond == "stop" && tt.profile == "bwrap-leaky.yaml" {
				fails := 0
				for _, res := range r.results {
					if res.Verdict == evidence.Fail {
						fails++
					}
				}
				if fails == 0 {
					t.Errorf("the leaky profile FAILed on no path with a response: %+v", r.results)
				}
			}
			for _, res := range r.results {
				where := res.Gate + "/" + res.Path
				if len(res.Responses) == 0 {
					t.Errorf("%s: no response recorded (detection: %+v)", where, res.Detection.Summary)
					continue
				}
				for _, resp := range res.Responses {
					if resp.Trigger.Source != "builtin" || resp.Trigger.Rule == "" || resp.Trigger.Received.IsZero() || resp.Started.Before(resp.Trigger.Received) {
						t.Errorf("%s: response trigger %+v started %s", where, resp.Trigger, resp.Started)
					}
					if resp.PollMS <= 0 || len(resp.Effects) != 3 {
						t.Errorf("%s: poll %.0fms, %d effects", where, resp.PollMS, len(resp.Effects))
					}
					tt.check(t, where, res, resp)
				}
			}
		})
	}
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// A response that cannot work is refused before anything runs.
func TestRespondUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--respond", "stop"}, "name a source too"},
		{[]string{"--monitor", "builtin", "--respond", "kill"}, "say stop, or exec:PATH"},
		{[]string{"--monitor", "builtin", "--respond", "exec:"}, "say stop, or exec:PATH"},
		{[]string{"--monitor", "builtin", "--respond", "exec:/nonexistent/isolate.sh"}, "give a path to an executable hook"},
	} {
		r := gatehouse(t, context.Background(), append([]string{"run", "--profile", profilePath("bwrap-leaky.yaml"), "--out", t.TempDir()}, tt.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("run %v: exit %d, stderr %q; want %d and %q", tt.args, r.code, r.stderr, exitUsage, tt.want)
		}
	}
}

// The builtin monitor watches a session past the stop-signal gate's stop:
// on bwrap-leaky (its stop leaves the sandbox's init and the probe's
// escaped child) it names the processes that kept making system calls; on
// bwrap-hardened (the whole cgroup is killed) it names none, however the
// dying processes' last calls fell.
func TestMonitorSeesProcessesAliveAfterStop(t *testing.T) {
	needSandbox(t)
	for _, tt := range []struct {
		profile string
		code    int
		alive   bool
	}{
		{"bwrap-leaky.yaml", exitViolation, true},
		{"bwrap-hardened.yaml", exitOK, false},
	} {
		t.Run(tt.profile, func(t *testing.T) {
			r := runProfile(t, tt.profile, "stop-signal", "--monitor", "builtin")
			if r.code != tt.code || len(r.results) != 2 {
				t.Fatalf("exit %d with %d results, want %d and 2\n%s\n%s", r.code, len(r.results), tt.code, r.stdout, r.stderr)
			}
			for _, res := range r.results {
				var seen []string
				for _, f := range res.Findings {
					if strings.Contains(f, "still making system calls after the stop") {
						seen = append(seen, f)
					}
				}
				if tt.alive && (len(seen) == 0 || !strings.Contains(strings.Join(seen, " "), "after the stop")) {
					t.Errorf("%s: the monitor named no process alive after the stop: %q", res.Path, res.Findings)
				}
				if !tt.alive && len(seen) > 0 {
					t.Errorf("%s: processes named alive after a stop that killed the cgroup: %q", res.Path, seen)
				}
			}
		})
	}
}
