package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// The session gates, each on both paths, FAIL on the leaky profile with the
// evidence that proves it and PASS on the hardened one; nothing is left
// behind either way.
func TestSessionGatesOnBwrapProfiles(t *testing.T) {
	needSandbox(t)
	gates := "foreign-storage,cross-session,stop-signal"
	tests := []struct {
		profile string
		code    int
		want    evidence.Verdict
	}{
		{"bwrap-hardened.yaml", exitOK, evidence.Pass},
		{"bwrap-leaky.yaml", exitViolation, evidence.Fail},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.profile, ".yaml"), func(t *testing.T) {
			before := leftovers()
			r := runProfile(t, tt.profile, gates)
			loadRunFolder(t, &r)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			if len(r.results) != 6 {
				t.Fatalf("want 6 results (3 gates x 2 paths), got %d; stdout:\n%s", len(r.results), r.stdout)
			}
			for _, res := range r.results {
				if res.Verdict != tt.want {
					wrongVerdict(t, res, tt.want)
				}
				checkProof(t, res, tt.want)
			}
			if strings.Contains(r.stdout, "GATEHOUSE STORAGE NONCE") || canaryRE.MatchString(r.stdout) {
				t.Errorf("a canary or nonce reached the printed output:\n%s", r.stdout)
			}
			assertOverlap(t, r.dir)
			assertNothingLeft(t, r.stdout)
			assertNoPlaces(t, before, r.stdout)
		})
	}
}

// checkProof asserts what each verdict must carry.
func checkProof(t *testing.T, res evidence.Result, want evidence.Verdict) {
	t.Helper()
	switch {
	case res.Gate == "stop-signal":
		if _, ok := res.Timings["stop_max_ms"]; !ok && want == evidence.Pass {
			t.Errorf("stop-signal/%s: no stop_max_ms in timings: %v", res.Path, res.Timings)
		}
		if _, ok := res.Timings["stop_p50_ms"]; !ok && want == evidence.Pass {
			t.Errorf("stop-signal/%s: no stop_p50_ms in timings: %v", res.Path, res.Timings)
		}
		if want == evidence.Pass && !strings.Contains(res.Reason, "p50") {
			t.Errorf("stop-signal/%s: reason lacks the latency: %s", res.Path, res.Reason)
		}
		if want == evidence.Fail && len(res.Hits) == 0 {
			t.Errorf("stop-signal/%s: FAIL without the late heartbeats that prove it", res.Path)
		}
	case want == evidence.Fail:
		if len(res.Crossings) == 0 {
			t.Errorf("%s/%s: FAIL without the crossing that proves it", res.Gate, res.Path)
		}
		for _, c := range res.Crossings {
			if c.Owner == c.SeenBy || c.Where == "" || c.Value == "" {
				t.Errorf("%s/%s: crossing does not name owner, reader and path: %+v", res.Gate, res.Path, c)
			}
		}
	case want == evidence.Pass:
		if !res.Control {
			t.Errorf("%s/%s: PASS without a positive control", res.Gate, res.Path)
		}
	}
}

// assertOverlap reads the session windows of cross-session and checks the
// two exchange windows of each scenario overlapped.
func assertOverlap(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "traces", "session-windows.jsonl"))
	if err != nil {
		t.Fatalf("no session windows in the trace: %v", err)
	}
	defer f.Close()
	type win struct {
		Scenario, Session, Step string
		Start, End              time.Time
	}
	by := map[string][]win{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var w win
		if err := json.Unmarshal(sc.Bytes(), &w); err != nil {
			t.Fatal(err)
		}
		if w.Step == "exchange" {
			by[w.Scenario] = append(by[w.Scenario], w)
		}
	}
	if len(by) != 2 {
		t.Fatalf("want exchange windows for both paths, got %v", by)
	}
	for name, ws := range by {
		if len(ws) != 2 || ws[0].Session == ws[1].Session {
			t.Fatalf("%s: want two sessions' windows, got %+v", name, ws)
		}
		a, b := ws[0], ws[1]
		if !(a.Start.Before(b.End) && b.Start.Before(a.End)) {
			t.Errorf("%s: windows do not overlap: %+v", name, ws)
		}
	}
}

// leftovers lists our places and bwrap staging folders in the temp folder.
func leftovers() map[string]bool {
	out := map[string]bool{}
	for _, pat := range []string{"gatehouse-places-*", "gatehouse-bwrap-*"} {
		m, _ := filepath.Glob(filepath.Join(os.TempDir(), pat))
		for _, p := range m {
			out[p] = true
		}
	}
	return out
}

// assertNoPlaces checks that no storage, shared or staging folder made
// during the run outlived it (folders that were there before are others').
func assertNoPlaces(t *testing.T, before map[string]bool, output string) {
	t.Helper()
	// Places and staging folders carry their lab's name: only this run's
	// count, so other runs on the machine at the same time do not.
	labs := labLineRE.FindAllStringSubmatch(output, -1)
	for p := range leftovers() {
		if before[p] {
			continue
		}
		// Staging folders carry their session's namespace name (with the
		// lab's) when they have one; one without can't be told apart.
		mine := !strings.Contains(p, "gatehouse-places-") && !strings.Contains(p, "gatehouse-bwrap-gh-")
		for _, l := range labs {
			if strings.Contains(p, "gatehouse-places-"+l[1]+"-") || strings.Contains(p, "gatehouse-bwrap-"+l[1]+"-") {
				mine = true
			}
		}
		if mine {
			t.Errorf("left behind: %s", p)
		}
	}
}

// loadRunFolder finds the run folder among whatever else --out holds (the
// index database, for one) and reads its results.
func loadRunFolder(t *testing.T, r *runOutput) {
	t.Helper()
	if r.dir != "" && len(r.results) > 0 {
		return
	}
	m := evidenceDirRE.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no evidence folder in the output:\n%s\n%s", r.stdout, r.stderr)
	}
	r.dir = m[1]
	b, err := os.ReadFile(filepath.Join(r.dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r.results); err != nil {
		t.Fatal(err)
	}
}

var evidenceDirRE = regexp.MustCompile(`(?m)^evidence: (\S+)$`)
