package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// reusable-state, on both paths: bwrap-hardened PASSes (each place written
// by both sessions, the later seeing its own value everywhere it searched
// and nothing of the earlier's), bwrap-leaky FAILs (its /tmp, /dev/shm and
// agent cache are host folders every session gets, and it binds the folder
// of every session's storage), with the earlier's value, where the later
// found it and the later session named; nothing is left behind.
func TestReusableStateOnBwrapProfiles(t *testing.T) {
	needSandbox(t)
	tests := []struct {
		profile string
		code    int
		want    evidence.Verdict
		persist []string // searches that must be among a FAIL's crossings
	}{
		{"bwrap-hardened.yaml", exitOK, evidence.Pass, nil},
		{"bwrap-leaky.yaml", exitViolation, evidence.Fail, []string{"search-tmp", "search-dev-shm", "search-var-cache", "search-mount:/storage"}},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.profile, ".yaml"), func(t *testing.T) {
			before := leftovers()
			r := runProfile(t, tt.profile, "reusable-state")
			if r.code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			if len(r.results) != 2 {
				t.Fatalf("want 2 results (1 gate x 2 paths), got %d; stdout:\n%s", len(r.results), r.stdout)
			}
			for _, res := range r.results {
				if res.Verdict != tt.want {
					wrongVerdict(t, res, tt.want)
				}
				checkPersisted(t, res, tt.persist)
			}
			if canaryRE.MatchString(r.stdout) || strings.Contains(r.stdout, "ghst") {
				t.Errorf("a value reached the printed output:\n%s", r.stdout)
			}
			assertNothingLeft(t, r.stdout)
			assertNoPlaces(t, before, r.stdout)
		})
	}
}

// checkPersisted: a reusable-state FAIL names each search that found the
// earlier session's value, with where, seen by the later session (not the
// result's own, earlier one); a PASS rests on the later session's control
// and on each place showing its own value, the agent-instruction files and
// caches among them, and the search of every mount point.
func checkPersisted(t *testing.T, res evidence.Result, persist []string) {
	t.Helper()
	if res.Verdict == evidence.Fail {
		for _, id := range persist {
			i := slices.IndexFunc(res.Crossings, func(c evidence.Crossing) bool {
				return c.Attempt == id && c.Owner == res.Session && c.SeenBy != res.Session && c.Where != "" && strings.HasPrefix(c.Value, "ghst")
			})
			if i < 0 || !strings.Contains(res.Reason, id) {
				t.Errorf("reusable-state/%s: %s not named as a crossing: %s; %+v", res.Path, id, res.Reason, res.Crossings)
			}
		}
		return
	}
	if res.Verdict != evidence.Pass {
		return // the caller's verdict check says it
	}
	if !res.Control || !strings.Contains(res.Reason, "every mount point searched to the end") {
		t.Errorf("reusable-state/%s: PASS without its controls: %s (control %v)", res.Path, res.Reason, res.Control)
	}
	var seen string
	for _, f := range res.Findings {
		if s, ok := strings.CutPrefix(f, "searched, own value seen: "); ok {
			seen = s
		}
	}
	for _, p := range []string{"home-cache", "pip-cache", "npm-cache", "config", "claude-home", "codex-home", "workspace-agents", "workspace-claude", "tmp", "mount:/workspace"} {
		if !slices.Contains(strings.Split(seen, ", "), p) {
			t.Errorf("reusable-state/%s: PASS, yet %s not among the places searched with the later session's own value seen: %q", res.Path, p, seen)
		}
	}
}
