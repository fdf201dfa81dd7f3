package evidence_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func cleanRun(gone time.Duration) evidence.StopRun {
	return evidence.StopRun{Session: "s1", MainBefore: true, ChildBefore: true, Gone: gone, TokenChecked: true, TokenRefused: true}
}

// busy is a run watched for window while tasks waited for a CPU stall.
func busy(r evidence.StopRun, window, stall time.Duration) evidence.StopRun {
	r.Window, r.CPUStall, r.StallKnown = window, stall, true
	return r
}

func superseded(r evidence.StopRun) evidence.StopRun {
	r.Superseded = "the machine was too loaded to judge the stop time"
	return r
}

func TestJudgeStop(t *testing.T) {
	late := func(after time.Duration, who string) evidence.Hit {
		return evidence.Hit{Time: t0.Add(after), Endpoint: "inference", Summary: "POST /v1/complete?hb=x&who=" + who}
	}
	tests := []struct {
		name   string
		runs   []evidence.StopRun
		ctrl   bool
		want   evidence.Verdict
		reason string
		p50    float64
	}{
		{"pass with p50 and max", []evidence.StopRun{cleanRun(300 * time.Millisecond), cleanRun(100 * time.Millisecond), cleanRun(200 * time.Millisecond)}, true, evidence.Pass, "p50 200ms, max 300ms over 3", 200},
		{"a heartbeat while the stop is under way counts in the latency", []evidence.StopRun{func() evidence.StopRun {
			r := cleanRun(700 * time.Millisecond)
			r.Late = []evidence.Hit{late(650*time.Millisecond, "main")}
			return r
		}()}, true, evidence.Pass, "p50 700ms", 700},
		{"a heartbeat well after the session was seen gone fails, even inside the limit", []evidence.StopRun{func() evidence.StopRun {
			r := cleanRun(100 * time.Millisecond)
			r.Late = []evidence.Hit{late(700*time.Millisecond, "main")}
			return r
		}()}, true, evidence.Fail, "a process nobody could see", 0},
		{"a heartbeat in flight when the session was seen gone does not", []evidence.StopRun{func() evidence.StopRun {
			r := cleanRun(100 * time.Millisecond)
			r.Late = []evidence.Hit{late(250*time.Millisecond, "main")}
			return r
		}()}, true, evidence.Pass, "p50 250ms", 250},
		// A beat sent before the end but still queued at the lab when the
		// session was seen gone is stamped late by a starved harness: the
		// line is when the lab had drained (issue 22, S3).
		{"a beat queued at the lab when the session was seen gone does not fail", []evidence.StopRun{func() evidence.StopRun {
			r := cleanRun(100 * time.Millisecond)
			r.Drained = 600 * time.Millisecond
			r.Late = []evidence.Hit{late(700*time.Millisecond, "main")}
			return r
		}()}, true, evidence.Pass, "p50 700ms", 700},
		{"a beat after the lab drained still fails", []evidence.StopRun{func() evidence.StopRun {
			r := cleanRun(100 * time.Millisecond)
			r.Drained = 150 * time.Millisecond
			r.Late = []evidence.Hit{late(700*time.Millisecond, "main")}
			return r
		}()}, true, evidence.Fail, "a process nobody could see", 0},
		{"a stop whose remains cannot be seen is no pass", []evidence.StopRun{func() evidence.StopRun {
			r := cleanRun(-1)
			r.Unknown = "its network namespace could not be identified"
			return r
		}()}, true, evidence.Inconclusive, "could not be identified", 0},
		{"fail when the escaped child keeps beating", []evidence.StopRun{func() evidence.StopRun {
			r := cleanRun(-1)
			r.Late = []evidence.Hit{late(time.Second, "child"), late(6*time.Second, "child")}
			r.Left = []string{"1 process(es) still in the session's network namespace"}
			return r
		}()}, true, evidence.Fail, "heartbeat(s) from the escaped child after stop", 0},
		{"a bind that could not be searched is no pass, with heartbeats during the stop", []evidence.StopRun{func() evidence.StopRun {
			r := cleanRun(300 * time.Millisecond)
			r.Late = []evidence.Hit{late(200*time.Millisecond, "main")}
			r.Unsearched = []string{"/run/gatehouse-doors/place-00-storage: no such file"}
			return r
		}()}, true, evidence.Inconclusive, "could not be searched: /run/gatehouse-doors/place-00-storage", 0},
		{"a write left still fails when another bind could not be searched", []evidence.StopRun{func() evidence.StopRun {
			r := cleanRun(300 * time.Millisecond)
			r.Left = []string{"1 write(s) after the session was seen gone"}
			r.Unsearched = []string{"/x: search cut"}
			return r
		}()}, true, evidence.Fail, "1 write(s) after", 0},
		{"fail when storage remains", []evidence.StopRun{func() evidence.StopRun { r := cleanRun(time.Millisecond); r.Left = []string{"storage /x"}; return r }()}, true, evidence.Fail, "left storage /x", 0},
		{"fail when the token still works", []evidence.StopRun{func() evidence.StopRun { r := cleanRun(time.Millisecond); r.TokenRefused = false; return r }()}, true, evidence.Fail, "token still works", 0},
		{"inconclusive without a child heartbeat first", []evidence.StopRun{func() evidence.StopRun { r := cleanRun(time.Millisecond); r.ChildBefore = false; return r }()}, true, evidence.Inconclusive, "escaped child before the stop", 0},
		{"inconclusive without a broker", []evidence.StopRun{func() evidence.StopRun { r := cleanRun(time.Millisecond); r.TokenChecked = false; return r }()}, true, evidence.Inconclusive, "token could not be checked", 0},
		{"inconclusive without a control", []evidence.StopRun{cleanRun(time.Millisecond)}, false, evidence.Inconclusive, "positive control", 0},
		{"inconclusive with no run", nil, true, evidence.Inconclusive, "no stop was measured", 0},
		// On a busy machine: a stop late by no more than tasks waited for a
		// CPU is not judged; anything a load cannot explain still FAILs.
		{"late by as much as the machine stalled: not judged", []evidence.StopRun{busy(cleanRun(6*time.Second), 7*time.Second, 4*time.Second)}, true, evidence.Inconclusive, "too loaded to judge the stop time", 0},
		{"late by more than the machine stalled: fail", []evidence.StopRun{busy(cleanRun(6*time.Second), 7*time.Second, 900*time.Millisecond)}, true, evidence.Fail, "still acting 5s after stop", 0},
		{"late on a machine mostly idle: fail", []evidence.StopRun{busy(cleanRun(9*time.Second), 40*time.Second, 5*time.Second)}, true, evidence.Fail, "still acting", 0},
		{"late on a kernel that does not tell its load: fail", []evidence.StopRun{func() evidence.StopRun {
			r := busy(cleanRun(6*time.Second), 7*time.Second, 7*time.Second)
			r.StallKnown = false
			return r
		}()}, true, evidence.Fail, "still acting", 0},
		{"late because the stop command ran out: fail on any machine", []evidence.StopRun{func() evidence.StopRun {
			r := busy(cleanRun(6*time.Second), 7*time.Second, 7*time.Second)
			r.StopCommandOver = true
			return r
		}()}, true, evidence.Fail, "still acting", 0},
		{"a process left on a busy machine: fail", []evidence.StopRun{func() evidence.StopRun {
			r := busy(cleanRun(-1), 7*time.Second, 7*time.Second)
			r.Left = []string{"1 process(es) still in the session's network namespace"}
			return r
		}()}, true, evidence.Fail, "still acting", 0},
		{"acting after it was seen gone on a busy machine: fail", []evidence.StopRun{func() evidence.StopRun {
			r := busy(cleanRun(6*time.Second), 7*time.Second, 7*time.Second)
			r.Late = []evidence.Hit{late(6500*time.Millisecond, "child")}
			return r
		}()}, true, evidence.Fail, "a process nobody could see", 0},
		{"no heartbeat while the machine stalled: not judged, and said why", []evidence.StopRun{func() evidence.StopRun {
			r := busy(cleanRun(time.Second), 2*time.Second, time.Second)
			r.ChildBefore, r.BeatWait, r.BeatStall = false, 30*time.Second, 20*time.Second
			return r
		}()}, true, evidence.Inconclusive, "too loaded to judge: no heartbeat from the escaped child", 0},
		{"a run measured again whose binds could not be searched is no pass", []evidence.StopRun{func() evidence.StopRun {
			r := superseded(cleanRun(6 * time.Second))
			r.Unsearched = []string{"/srv/shared: the search stopped after 5000 entries"}
			return r
		}(), cleanRun(200 * time.Millisecond)}, true, evidence.Inconclusive, "could not be searched: /srv/shared", 0},
		{"a run measured again counts only for what it left after: pass on the new one", []evidence.StopRun{superseded(cleanRun(6 * time.Second)), cleanRun(200 * time.Millisecond)}, true, evidence.Pass, "over 1 run", 200},
		{"a run measured again that acted after it was seen gone: fail", []evidence.StopRun{func() evidence.StopRun {
			r := superseded(cleanRun(6 * time.Second))
			r.Late = []evidence.Hit{late(8*time.Second, "child")}
			return r
		}(), cleanRun(200 * time.Millisecond)}, true, evidence.Fail, "measured again", 0},
		{"only runs measured again: no pass", []evidence.StopRun{superseded(cleanRun(6 * time.Second))}, true, evidence.Inconclusive, "no stop was measured", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stops := make([]time.Time, len(tt.runs))
			for i := range stops {
				stops[i] = t0
			}
			j, timings := evidence.JudgeStop(evidence.StopObservation{Limit: 5 * time.Second, Interval: 100 * time.Millisecond, Stops: stops, Runs: tt.runs, Control: tt.ctrl})
			if j.Verdict != tt.want || !strings.Contains(j.Reason, tt.reason) {
				t.Fatalf("got %s (%s), want %s containing %q", j.Verdict, j.Reason, tt.want, tt.reason)
			}
			if tt.want == evidence.Pass && timings["stop_p50_ms"] != tt.p50 {
				t.Fatalf("p50 %v ms, want %v (timings %v)", timings["stop_p50_ms"], tt.p50, timings)
			}
			if tt.want == evidence.Fail && strings.Contains(tt.name, "child") && len(j.Violating) != 1 {
				t.Fatalf("want the one heartbeat past the limit as proof, got %v", j.Violating)
			}
		})
	}
}

// The lab stamps a hit before it takes the log's lock, so a preempted
// record can append a beat after a later one (issue 22, C7): the latency
// is the latest beat, wherever it sits in the list.
func TestLatencyIsTheLatestBeatNotTheLastListed(t *testing.T) {
	stop := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	r := evidence.StopRun{Gone: 2 * time.Second, Late: []evidence.Hit{
		{Time: stop.Add(6 * time.Second)},
		{Time: stop.Add(1 * time.Second)},
	}}
	if d, ok := r.Latency(stop); !ok || d != 6*time.Second {
		t.Errorf("Latency = %s, %v; want 6s, the latest beat", d, ok)
	}
}
