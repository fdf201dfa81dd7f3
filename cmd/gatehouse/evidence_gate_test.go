package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// copyProfile copies a shipped profile and what it references elsewhere,
// optionally appending to the profile (which changes its policy digest).
func copyProfile(t *testing.T, name, extra string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{name + ".yaml", name + ".nft"} {
		b, err := os.ReadFile(profilePath(f))
		if err != nil {
			continue // no egress ruleset
		}
		if strings.HasSuffix(f, ".yaml") {
			b = append(b, extra...)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, name+".yaml")
}

func testGate(t *testing.T, e *evidenceRuns) {
	otherKey := filepath.Join(t.TempDir(), "other")
	if r := gatehouse(t, context.Background(), "keys", "generate", "--out", otherKey); r.code != exitOK {
		t.Fatal(r.stderr)
	}
	hard, leaky, offline := profilePath("bwrap-hardened.yaml"), profilePath("bwrap-leaky.yaml"), profilePath("bwrap-offline.yaml")
	base := func(policy string, extra ...string) []string {
		// These runs ran one gate: name it, since the default is all eight.
		return append([]string{"--key", e.pub, "--policy", policy, "--db", e.db, "--require", "external-callback"}, extra...)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string // in stdout+stderr
	}{
		{"right config passes", base(hard, "--max-age", "1h"), exitOK, "PASS: release allowed by run " + e.hard.id},
		{"same policy bytes in another folder pass", base(copyProfile(t, "bwrap-hardened", "")), exitOK, "PASS"},
		{"required gate that ran passes", base(hard, "--require", "external-callback"), exitOK, "PASS"},
		{"a run of some gates does not release by default", []string{"--key", e.pub, "--policy", hard, "--db", e.db}, exitViolation,
			"[gate-missing] gate cloud-metadata has no result"},
		{"a FAIL", base(leaky), exitViolation, "[gate-fail] gate external-callback FAILED on path normal"},
		{"an INCONCLUSIVE", base(offline), exitViolation, "[gate-inconclusive] gate external-callback is INCONCLUSIVE"},
		{"a missing gate", base(hard, "--require", "external-callback,cloud-metadata"), exitViolation,
			"[gate-missing] gate cloud-metadata has no result on path normal"},
		{"a different image digest", base(hard, "--image", "sha256:"+strings.Repeat("ab", 32)), exitViolation,
			"[image-mismatch] image mismatch"},
		{"a different policy", base(copyProfile(t, "bwrap-hardened", "# edited\n")), exitViolation,
			"[no-evidence] no verified evidence for policy"},
		{"too old", base(hard, "--max-age", "1ms"), exitViolation, "[too-old]"},
		{"signed by another key", []string{"--key", otherKey + ".pub", "--policy", hard, "--db", e.db, "--require", "external-callback"}, exitViolation,
			"[bad-signature]"},
		{"only unsigned evidence", []string{"--key", e.pub, "--policy", hard, "--db", e.unsignedDB, "--require", "external-callback"}, exitViolation,
			"[bad-signature]"},
		{"no index", base(hard)[:4], exitViolation, "no index at"},
		{"no policy", []string{"--key", e.pub, "--db", e.db}, exitUsage, "--policy FILE is required"},
		{"bad max-age", base(hard, "--max-age", "soon"), exitUsage, "--max-age"},
		{"no key", []string{"--policy", hard, "--db", e.db}, exitUsage, "--key"},
	}
	time.Sleep(2 * time.Millisecond) // so "too old" is too old
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"gate"}, tt.args...)
			if tt.name == "no index" {
				args = append(args, "--db", filepath.Join(dir, "none.db"))
			}
			r := gatehouse(t, context.Background(), args...)
			if r.code != tt.code || !strings.Contains(r.stdout+r.stderr, tt.want) {
				t.Errorf("exit %d (want %d), output lacks %q:\n%s%s", r.code, tt.code, tt.want, r.stdout, r.stderr)
			}
		})
	}
	t.Run("an edited bundle behind a passing index row is refused", func(t *testing.T) {
		p := filepath.Join(e.hard.dir, "traces", "probe-attempts.jsonl")
		orig, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.WriteFile(p, orig, 0o644) })
		if err := os.WriteFile(p, append(orig, "{}\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		r := gatehouse(t, context.Background(), append([]string{"gate"}, base(hard)...)...)
		if r.code != exitViolation || !strings.Contains(r.stdout, "[bad-signature]") || !strings.Contains(r.stdout, "traces/probe-attempts.jsonl") {
			t.Errorf("exit %d; want 1, bad-signature naming the file:\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
}

func testDiff(t *testing.T, e *evidenceRuns) {
	ctx := context.Background()
	r := gatehouse(t, ctx, "diff", e.hard.dir, e.leaky.dir, "--key", e.pub)
	if r.code != exitViolation || !strings.Contains(r.stderr, "REGRESSION") {
		t.Errorf("hardened -> leaky: exit %d, want 1 with REGRESSION; stderr %s", r.code, r.stderr)
	}
	for _, want := range []string{
		"(verified)",
		"! external-callback    normal        PASS -> FAIL",
		"! external-callback    assume-breach PASS -> FAIL",
		"[policy] digest", "[policy] profile bwrap-hardened.yaml -> bwrap-leaky.yaml",
		"[policy] bwrap-hardened.nft (only in A)",
		"[effective normal] network rules", "[effective normal] mounts",
		"[effective assume-breach] capabilities", `"cap_eff": "000001`,
		`"--ro-bind",`, `"/etc",`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("diff hardened leaky lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", r.stdout)
	}
	r = gatehouse(t, ctx, "diff", e.leaky.dir, e.hard.dir)
	if r.code != exitOK || !strings.Contains(r.stdout, "* external-callback    normal        FAIL -> PASS") {
		t.Errorf("leaky -> hardened: exit %d, want 0 (an improvement):\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Same policy, another run, one as archive: only per-run noise differs,
	// and none of it may be reported.
	r = gatehouse(t, ctx, "diff", filepath.Join(filepath.Dir(e.hard.dir), e.hard.id+".tar.gz"), e.unsignedRun.dir)
	if r.code != exitOK || !strings.Contains(r.stdout, "no difference in what was tested") {
		t.Errorf("hardened vs hardened: exit %d, want 0 and no difference:\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = gatehouse(t, ctx, "diff", e.hard.dir)
	if r.code != exitUsage {
		t.Errorf("one argument: exit %d, want 2", r.code)
	}
}
