package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence/keys"
)

// An index that is not there is one condition, "no index at PATH", and one
// exit code in every verb that reads recorded runs: 1, as docs/evidence.md
// says for gate (history said 2 before the exit code table). An index file
// that is not an index is a usage error (--db names something else) in
// each of them.
func TestNoIndexIsOneExitCode(t *testing.T) {
	dir := t.TempDir()
	prefix := filepath.Join(dir, "k")
	if _, _, err := keys.GenerateFiles(prefix, []byte("pw")); err != nil {
		t.Fatal(err)
	}
	t.Setenv(keys.PasswordEnv, "pw")
	missing := filepath.Join(dir, "nowhere", "gatehouse-index.db")
	notIndex := filepath.Join(dir, "not-an-index.db")
	if err := os.WriteFile(notIndex, []byte("not sqlite, not an index\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	verbs := map[string]func(db string) []string{
		"history": func(db string) []string { return []string{"history", "--db", db} },
		"gate": func(db string) []string {
			return []string{"gate", "--key", prefix + ".pub", "--policy", profilePath("bwrap-hardened.yaml"), "--db", db}
		},
		"merge": func(db string) []string {
			return []string{"merge", "--group", "g1", "--key", prefix + ".key", "--db", db}
		},
	}
	for name, args := range verbs {
		t.Run(name+" without an index exits 1", func(t *testing.T) {
			r := gatehouse(t, context.Background(), args(missing)...)
			if r.code != exitViolation || !strings.Contains(r.stderr, "no index at "+missing) {
				t.Errorf("exit %d, want %d naming the missing index; stderr:\n%s", r.code, exitViolation, r.stderr)
			}
		})
		t.Run(name+" with a file that is not an index exits 2", func(t *testing.T) {
			r := gatehouse(t, context.Background(), args(notIndex)...)
			if r.code != exitUsage {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, exitUsage, r.stderr)
			}
		})
	}
}

// --help is exit 0 for every subcommand too (intake mint, the reference
// service's token command, said 2 before the exit code table).
func TestSubcommandHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{
		{"intake", "mint", "--help"},
		{"agents", "list", "--help"},
		{"keys", "generate", "--help"},
		{"lab", "up", "--help"},
		{"rehearse", "triage", "--help"},
		{"--help"},
	} {
		r := gatehouse(t, context.Background(), args...)
		if r.code != exitOK || strings.Contains(r.stderr, "gatehouse: ") {
			t.Errorf("%s: exit %d, want %d and no error; stderr:\n%s", strings.Join(args, " "), r.code, exitOK, r.stderr)
		}
	}
}
