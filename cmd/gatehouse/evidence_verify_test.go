package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testVerify(t *testing.T, e *evidenceRuns) {
	otherPub := filepath.Join(t.TempDir(), "other")
	if r := gatehouse(t, context.Background(), "keys", "generate", "--out", otherPub); r.code != exitOK {
		t.Fatal(r.stderr)
	}
	partial := filepath.Join(t.TempDir(), "."+e.hard.id+".partial")
	if err := os.CopyFS(partial, os.DirFS(e.hard.dir)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{"signed folder verifies and says what was tested", []string{e.hard.dir, "--key", e.pub}, exitOK, []string{
			"VERIFIED", "What was tested", "target:          bwrap", "profile:         bwrap-hardened",
			"policy digest:   " + e.hard.run.PolicyDigest, "image digest:    none", "corpus:", "harness version:",
			"commit:", "pipeline:", "external-callback    normal        PASS", "external-callback    assume-breach PASS",
			"What this does NOT prove", "no sandbox escape exists", "needs a new run"}, ""},
		{"archive verifies", []string{"--key", e.pub, filepath.Join(filepath.Dir(e.hard.dir), e.hard.id+".tar.gz")}, exitOK,
			[]string{"VERIFIED", ".tar.gz"}, ""},
		{"a FAIL run verifies: verify checks evidence, not verdicts", []string{e.leaky.dir, "--key", e.pub}, exitOK,
			[]string{"VERIFIED", "external-callback    normal        FAIL"}, ""},
		{"wrong key", []string{e.hard.dir, "--key", otherPub + ".pub"}, exitViolation, nil, "signature does not verify: attestations/test-result.sigstore.json"},
		{"unsigned run", []string{e.unsignedRun.dir, "--key", e.pub}, exitViolation, nil, "UNSIGNED"},
		{"partial folder", []string{partial, "--key", e.pub}, exitViolation, nil, "partial"},
		{"no key", []string{e.hard.dir}, exitUsage, nil, "--key"},
		{"keyless needs identity, issuer and trusted root", []string{e.hard.dir, "--keyless"}, exitUsage, nil, "--certificate-identity"},
		{"two bundles", []string{e.hard.dir, e.leaky.dir, "--key", e.pub}, exitUsage, nil, "exactly one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := gatehouse(t, context.Background(), append([]string{"verify"}, tt.args...)...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			for _, w := range tt.stdout {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, r.stdout)
				}
			}
			if !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("stderr %q lacks %q", r.stderr, tt.stderr)
			}
		})
	}
}

// testTamper changes a copy of the signed hardened run in one way each and
// expects verify to refuse it, naming the file.
func testTamper(t *testing.T, e *evidenceRuns) {
	flip := func(rel string) func(string) error {
		return func(dir string) error {
			p := filepath.Join(dir, rel)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 0x01
			return os.WriteFile(p, b, 0o644)
		}
	}
	tests := []struct {
		name, file string
		change     func(dir string) error
	}{
		{"flipped byte in a trace", "traces/endpoint-hits.jsonl", flip("traces/endpoint-hits.jsonl")},
		{"flipped byte in the report", "report.html", flip("report.html")},
		{"flipped byte in a policy file", "policy/bwrap-hardened.nft", flip("policy/bwrap-hardened.nft")},
		{"edited verdict", "results.json", func(dir string) error {
			p := filepath.Join(dir, "results.json")
			b, _ := os.ReadFile(p)
			return os.WriteFile(p, []byte(strings.Replace(string(b), `"PASS"`, `"FAIL"`, 1)), 0o644)
		}},
		{"added file", "notes.txt", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("trust me\n"), 0o644)
		}},
		{"missing file", "reports/junit.xml", func(dir string) error { return os.Remove(filepath.Join(dir, "reports/junit.xml")) }},
		{"signature from another run", "attestations/", func(dir string) error {
			b, err := os.ReadFile(filepath.Join(e.leaky.dir, "attestations/test-result.sigstore.json"))
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "attestations/test-result.sigstore.json"), b, 0o644)
		}},
		{"missing signature", "attestations/gatehouse-run.sigstore.json", func(dir string) error {
			return os.Remove(filepath.Join(dir, "attestations/gatehouse-run.sigstore.json"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyRun(t, e.hard.dir)
			if err := tt.change(dir); err != nil {
				t.Fatal(err)
			}
			r := gatehouse(t, context.Background(), "verify", dir, "--key", e.pub)
			if r.code != exitViolation || !strings.Contains(r.stderr, "NOT VERIFIED") || !strings.Contains(r.stderr, tt.file) {
				t.Errorf("exit %d, stderr %q; want 1 naming %s", r.code, r.stderr, tt.file)
			}
		})
	}
}
