package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence/index"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
)

// signedRun is one real run of the external-callback gate, as the CLI left it.
type signedRun struct {
	runOutput
	id string
}

// evidenceRuns makes a key pair with the CLI and four real runs: hardened
// (signed, archived), leaky and offline (signed) in one index, and hardened
// unsigned in another.
type evidenceRuns struct {
	dir, key, pub, db, unsignedDB     string
	hard, leaky, offline, unsignedRun signedRun
}

func makeEvidenceRuns(t *testing.T) *evidenceRuns {
	t.Helper()
	ctx := context.Background()
	e := &evidenceRuns{dir: t.TempDir()}
	prefix := filepath.Join(e.dir, "ci")
	e.key, e.pub = prefix+".key", prefix+".pub"
	if r := gatehouse(t, ctx, "keys", "generate", "--out", prefix); r.code != exitOK {
		t.Fatalf("keys generate: exit %d: %s", r.code, r.stderr)
	}
	out, unsignedOut := filepath.Join(e.dir, "runs"), filepath.Join(e.dir, "unsigned")
	e.db, e.unsignedDB = index.DefaultPath(out), index.DefaultPath(unsignedOut)
	probe := probetest.Build(t)
	run := func(prof, out string, code int, extra ...string) signedRun {
		args := append([]string{"run", "--profile", profilePath(prof), "--gates", "external-callback",
			"--out", out, "--probe", probe, "--quiet"}, extra...)
		r := signedRun{runOutput: gatehouse(t, ctx, args...)}
		if r.code != code {
			t.Fatalf("%s: exit %d, want %d\n%s\n%s", prof, r.code, code, r.stdout, r.stderr)
		}
		m := regexp.MustCompile(`(?m)^evidence: (.+)$`).FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("%s: no evidence line in\n%s", prof, r.stdout)
		}
		r.dir, r.id = m[1], filepath.Base(m[1])
		b, err := os.ReadFile(filepath.Join(r.dir, "run.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &r.run); err != nil {
			t.Fatal(err)
		}
		return r
	}
	e.hard = run("bwrap-hardened.yaml", out, exitOK, "--key", e.key, "--archive")
	// The leaky profile reaches the host: run --key refuses it, so it runs
	// unsigned and is sealed afterwards by a process that runs no sandbox.
	if r := gatehouse(t, ctx, "run", "--profile", profilePath("bwrap-leaky.yaml"), "--gates", "external-callback",
		"--out", out, "--quiet", "--key", e.key); r.code != exitUsage || !strings.Contains(r.stderr, "--key refused") {
		t.Fatalf("run --key on bwrap-leaky: exit %d, want 2 and the refusal:\n%s", r.code, r.stderr)
	}
	e.leaky = run("bwrap-leaky.yaml", out, exitViolation)
	if r := gatehouse(t, ctx, "seal", "--key", e.key, "--db", filepath.Join(out, "gatehouse-index.db"), e.leaky.dir); r.code != exitOK || !strings.Contains(r.stdout, "sealed:   "+e.leaky.dir) {
		t.Fatalf("seal %s: exit %d\n%s\n%s", e.leaky.dir, r.code, r.stdout, r.stderr)
	}
	e.offline = run("bwrap-offline.yaml", out, exitInconclusive, "--key", e.key)
	e.unsignedRun = run("bwrap-hardened.yaml", unsignedOut, exitOK)
	// Leftover namespaces and processes are checked by
	// TestNetworkGatesOnBwrapProfiles; here other engineers' runs on the
	// same machine would make that check lie.
	return e
}

// TestEvidenceCLI drives keys, run --key, verify, gate, diff and history
// through run() over real signed runs of the bwrap profiles.
func TestEvidenceCLI(t *testing.T) {
	needSandbox(t)
	t.Setenv("COSIGN_PASSWORD", "correct horse")
	e := makeEvidenceRuns(t)
	ctx := context.Background()

	t.Run("keys generate refuses to overwrite and keeps the key private", func(t *testing.T) {
		st, err := os.Stat(e.key)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", e.key, err, st.Mode())
		}
		r := gatehouse(t, ctx, "keys", "generate", "--out", strings.TrimSuffix(e.key, ".key"))
		if r.code != exitUsage || !strings.Contains(r.stderr, "exists") {
			t.Errorf("second generate: exit %d, stderr %q; want 2 and 'exists'", r.code, r.stderr)
		}
		t.Setenv("COSIGN_PASSWORD", "")
		os.Unsetenv("COSIGN_PASSWORD")
		r = gatehouse(t, ctx, "keys", "generate", "--out", filepath.Join(t.TempDir(), "x"))
		if r.code != exitUsage || !strings.Contains(r.stderr, "COSIGN_PASSWORD") {
			t.Errorf("without password: exit %d, stderr %q", r.code, r.stderr)
		}
	})

	t.Run("policy digest in run.json is what gate computes from the profile", func(t *testing.T) {
		for _, r := range []signedRun{e.hard, e.leaky, e.offline} {
			p, err := kinds.Load(profilePath(r.run.Profile + ".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if p.Digest() != r.run.PolicyDigest {
				t.Errorf("%s: run.json %s, kinds.Load(...).Digest() %s", r.run.Profile, r.run.PolicyDigest, p.Digest())
			}
		}
	})

	t.Run("report.html is in the run folder and covered by SHA256SUMS", func(t *testing.T) {
		sums, err := os.ReadFile(filepath.Join(e.hard.dir, "SHA256SUMS"))
		if err != nil || !strings.Contains(string(sums), "  report.html\n") {
			t.Errorf("SHA256SUMS lacks report.html (%v):\n%s", err, sums)
		}
		if _, err := os.Stat(filepath.Join(e.unsignedRun.dir, "report.html")); err != nil {
			t.Errorf("unsigned run has no report: %v", err)
		}
		if _, err := os.Stat(filepath.Join(e.unsignedRun.dir, "SHA256SUMS")); err == nil {
			t.Error("unsigned run has SHA256SUMS")
		}
	})

	t.Run("verify", func(t *testing.T) { testVerify(t, e) })
	t.Run("tamper", func(t *testing.T) { testTamper(t, e) })
	t.Run("gate", func(t *testing.T) { testGate(t, e) })
	t.Run("diff", func(t *testing.T) { testDiff(t, e) })
	t.Run("json", func(t *testing.T) { testJSONOutputs(t, e) })
	t.Run("history", func(t *testing.T) {
		r := gatehouse(t, ctx, "history", "--db", e.db)
		for _, want := range []string{e.hard.id, e.leaky.id, e.offline.id, "PASSED", "FAILED", "WARNED", "3 run(s)"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("history lacks %q:\n%s", want, r.stdout)
			}
		}
		if strings.Index(r.stdout, e.offline.id) > strings.Index(r.stdout, e.hard.id) {
			t.Errorf("history is not newest first:\n%s", r.stdout)
		}
		r = gatehouse(t, ctx, "history", "--db", e.unsignedDB, "--limit", "1")
		if r.code != exitOK || !strings.Contains(r.stdout, "UNSIGNED") || !strings.Contains(r.stdout, e.unsignedRun.id) {
			t.Errorf("unsigned history: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
}

func TestEvidenceVerbsHelp(t *testing.T) {
	for _, verb := range []string{"keys", "verify", "gate", "diff", "history"} {
		r := gatehouse(t, context.Background(), verb, "--help")
		out := r.stdout + r.stderr
		if r.code != exitOK || !strings.Contains(out, "Example") {
			t.Errorf("%s --help: exit %d, output:\n%s", verb, r.code, out)
		}
	}
	r := gatehouse(t, context.Background(), "verify", "--help")
	if !strings.Contains(r.stderr, "cosign verify-blob-attestation") || !strings.Contains(r.stderr, "UNSIGNED") {
		t.Errorf("verify --help lacks the cosign command or the unsigned warning:\n%s", r.stderr)
	}
}

// copyRun copies a run folder to a new place under the same name.
func copyRun(t *testing.T, dir string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(dir))
	if err := os.CopyFS(dst, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	return dst
}
