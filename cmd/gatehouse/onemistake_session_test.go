package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// sessionGates are the gates the session-model mistakes may touch.
const sessionGates = "long-lived-secret,host-access,stop-signal,dns-exfiltration"

// One-mistake profiles for issue 8's classes, each bwrap-hardened with one
// change: it must FAIL the gate the change breaks and nothing else, and a
// harmless change must still PASS.
func TestOneMistakeSessionModel(t *testing.T) {
	needSandbox(t)
	pass := want{evidence.Pass, ""}
	tests := []struct {
		name  string
		edit  func(string) string
		wants map[string]want
	}{
		{
			// One session is one sandbox: a secret-holding process the
			// platform runs inside it, as the agent's own user, is readable
			// by the agent on both paths.
			name: "secret-holding process inside, as the agent",
			edit: replace("secret_process: {where: outside}", "secret_process: {where: inside, user: agent}"),
			wants: map[string]want{"long-lived-secret": {evidence.Fail, "process/DB_PASSWORD"},
				"host-access": pass, "stop-signal": pass, "dns-exfiltration": pass},
		},
		{
			// The harness's own fake engine socket bound in: host-access
			// FAILs on the contact; stop-signal must not FAIL because the
			// socket file (the harness's, not the session's) outlives a stop.
			name: "the fake engine socket bound in",
			edit: addArgs("the container engine's socket, bound into the sandbox", "--bind", "{{place:engine}}/docker.sock", "/var/run/docker.sock"),
			wants: map[string]want{"host-access": {evidence.Fail, "engine-socket"},
				"long-lived-secret": pass, "stop-signal": pass, "dns-exfiltration": pass},
		},
		{
			// The careless stop: only the commands' own process groups.
			name: "stop scope process",
			edit: replace("limits:\n  stop: 5s", "limits:\n  stop: 5s\n  stop_scope: process"),
			wants: map[string]want{"stop-signal": {evidence.Fail, "escaped child"},
				"long-lived-secret": pass, "host-access": pass, "dns-exfiltration": pass},
		},
		{
			// Harmless: a loopback resolver stub (nothing listens there,
			// and the ruleset lets loopback through): lookups are counted
			// toward it, not toward the lab's resolver.
			name: "harmless: a loopback resolver",
			edit: replace("resolver: 203.0.113.53", "resolver: 127.0.0.53"),
			wants: map[string]want{"dns-exfiltration": pass,
				"long-lived-secret": pass, "host-access": pass, "stop-signal": pass},
		},
		{
			// Harmless: a stop limit longer than the policy allows is
			// judged against the policy's maximum, and this stop is fast.
			name: "harmless: a long stop limit, bounded by the policy",
			edit: replace("limits:\n  stop: 5s", "limits:\n  stop: 60s"),
			wants: map[string]want{"stop-signal": pass,
				"long-lived-secret": pass, "host-access": pass, "dns-exfiltration": pass},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := checkGatesOn(t, oneMistake(t, tt.edit), sessionGates, tt.wants)
			if strings.Contains(tt.name, "long stop limit") {
				for _, res := range r.results {
					if res.Gate == "stop-signal" && res.Timings["stop_limit_ms"] != 10000 {
						t.Errorf("%s: judged against %v ms, want the policy's 10000", res.Path, res.Timings["stop_limit_ms"])
					}
				}
			}
		})
	}
}

// stop-signal judges what the session made and did, against a limit the
// policy bounds: a team's read-write checkout outliving a stop is normal
// (PASS, where it used to count as storage left), and a platform whose stop
// takes 12 s, declared with a 30 s limit, is judged against the policy's
// 10 s (FAIL, where it used to PASS).
func TestOneMistakeStop(t *testing.T) {
	needSandbox(t)
	checkout := t.TempDir()
	openToUsers(t, checkout)
	if err := os.WriteFile(filepath.Join(checkout, "README"), []byte("the team's project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(string) string
		want want
	}{
		{"harmless: a read-write project checkout", addArgs("the team's project checkout, read-write", "--bind", checkout, "/project"), want{evidence.Pass, ""}},
		{"a slow platform stop behind a lax limit", replace("limits:\n  stop: 5s", "limits:\n  stop: 30s\n  stop_command: [/bin/sleep, \"12\"]"), want{evidence.Fail, "still acting 10s after stop"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkGatesOn(t, oneMistake(t, tt.edit), "stop-signal", map[string]want{"stop-signal": tt.want})
			if _, err := os.Stat(filepath.Join(checkout, "README")); err != nil {
				t.Errorf("the team's checkout was touched: %v", err)
			}
		})
	}
}

func replace(old, new string) func(string) string {
	return func(y string) string { return strings.Replace(y, old, new, 1) }
}
