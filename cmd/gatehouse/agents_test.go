package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgentsVerb: the agents verb teaches, lists an empty cache honestly,
// and exits 2 with the reason when an agent is neither cached nor
// fetchable (no silent fallback to anything).
func TestAgentsVerb(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("GATEHOUSE_CACHE", cache)
	t.Setenv("GATEHOUSE_NPM_REGISTRY", "http://127.0.0.1:1") // nothing listens there
	t.Setenv("GATEHOUSE_NPM_REGISTRY_INSECURE_LOOPBACK", "1")
	script := filepath.Join(t.TempDir(), "my-agent.sh")
	os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755)

	tests := []struct {
		name   string
		args   []string
		code   int
		output string // in stdout+stderr
	}{
		{"help teaches with an example", []string{"agents", "--help"}, exitOK, "Example"},
		{"no subcommand", []string{"agents"}, exitUsage, "say list, install or lock"},
		{"install without a name", []string{"agents", "install"}, exitUsage, "say which agent"},
		{"unknown agent", []string{"agents", "install", "gemini"}, exitUsage, "unknown agent"},
		{"offline and not cached", []string{"agents", "install", "codex"}, exitUsage, "not cached in " + filepath.Join(cache, "agents") + " and the npm registry cannot be reached"},
		{"lock with the registry offline", []string{"agents", "lock"}, exitUsage, "npm registry"},
		{"lock takes no names", []string{"agents", "lock", "codex"}, exitUsage, "takes only --out"},
		{"exec needs no install", []string{"agents", "install", "exec:" + script}, exitOK, "nothing to install"},
		{"list says what is missing", []string{"agents", "list"}, exitOK, "claude-code: agent not installed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := gatehouse(t, context.Background(), tt.args...)
			if r.code != tt.code || !strings.Contains(r.stdout+r.stderr, tt.output) {
				t.Errorf("exit %d (want %d), output does not say %q:\n%s%s", r.code, tt.code, tt.output, r.stdout, r.stderr)
			}
		})
	}

	// Plain http on loopback without the opt-in: refused before any request.
	t.Setenv("GATEHOUSE_NPM_REGISTRY_INSECURE_LOOPBACK", "")
	if r := gatehouse(t, context.Background(), "agents", "install", "codex"); r.code != exitUsage || !strings.Contains(r.stderr, "GATEHOUSE_NPM_REGISTRY_INSECURE_LOOPBACK=1") {
		t.Errorf("install from plain http on loopback, not said so: exit %d, %s", r.code, r.stderr)
	}

	r := gatehouse(t, context.Background(), "agents", "list", "--output", "json")
	var rows []struct {
		Name, Version, API, Dir string
		Installed               bool
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 3 {
		t.Fatalf("list --output json: %v\n%s", err, r.stdout)
	}
	for _, row := range rows {
		if row.Installed || row.Version == "" || row.API == "" || row.Dir != filepath.Join(cache, "agents", row.Name+"-"+row.Version) {
			t.Errorf("row %+v: want not installed, with its pin, API and cache folder", row)
		}
	}
}
