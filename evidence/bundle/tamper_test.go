package bundle_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
)

// rewriteAttestation decodes an attestation's JSON, lets f change it, and
// writes it back (valid JSON, changed content).
func rewriteAttestation(t *testing.T, dir, rel string, f func(env map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, rel)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	f(m["dsseEnvelope"].(map[string]any))
	out, _ := json.Marshal(m)
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyRefusesTampering(t *testing.T) {
	_, v, _ := testKeys(t)
	// A second bundle of a different run (same key) to swap attestations from.
	s, _, _ := testKeys(t)
	other := filepath.Join(t.TempDir(), "run-1")
	writeRun(t, other, 3, 21, testImage)
	if err := bundle.Seal(context.Background(), other, s); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		mutate   func(t *testing.T, dir string) string // returns the dir to verify
		wantKind error
		wantFile string
	}{
		{"run.json field", func(t *testing.T, d string) string {
			edit(t, d, "run.json", `"target": "process"`, `"target": "proceSs"`)
			return d
		}, bundle.ErrDigest, "run.json"},
		{"run.json image digest", func(t *testing.T, d string) string {
			edit(t, d, "run.json", testImage[:20], "sha256:ffffffffffff")
			return d
		}, bundle.ErrDigest, "run.json"},
		{"run.json incomplete", func(t *testing.T, d string) string {
			edit(t, d, "run.json", `"complete": true`, `"complete": false`)
			return d
		}, bundle.ErrIncomplete, "run.json"},
		{"run.json garbage", func(t *testing.T, d string) string {
			os.WriteFile(filepath.Join(d, "run.json"), []byte("{not json"), 0o644)
			return d
		}, bundle.ErrMalformed, "run.json"},
		{"results.json verdict", func(t *testing.T, d string) string {
			edit(t, d, "results.json", `"verdict": "PASS"`, `"verdict": "FAIL"`)
			return d
		}, bundle.ErrDigest, "results.json"},
		{"hits trace byte", func(t *testing.T, d string) string {
			flip(t, d, "traces/endpoint-hits.jsonl", 10)
			return d
		}, bundle.ErrDigest, "traces/endpoint-hits.jsonl"},
		{"attempts trace last byte", func(t *testing.T, d string) string {
			flip(t, d, "traces/probe-attempts.jsonl", -1)
			return d
		}, bundle.ErrDigest, "traces/probe-attempts.jsonl"},
		{"policy file", func(t *testing.T, d string) string {
			edit(t, d, "policy/egress.nft", "policy drop", "policy acpt")
			return d
		}, bundle.ErrDigest, "policy/egress.nft"},
		{"report", func(t *testing.T, d string) string {
			flip(t, d, "reports/junit.xml", 0)
			return d
		}, bundle.ErrDigest, "reports/junit.xml"},
		{"SHA256SUMS digest", func(t *testing.T, d string) string {
			flip(t, d, bundle.SumsFile, 0)
			return d
		}, bundle.ErrDigest, bundle.SumsFile},
		{"SHA256SUMS removed", func(t *testing.T, d string) string {
			os.Remove(filepath.Join(d, bundle.SumsFile))
			return d
		}, bundle.ErrMissingFile, bundle.SumsFile},
		{"signature bytes", func(t *testing.T, d string) string {
			rewriteAttestation(t, d, bundle.TestResultFile, func(env map[string]any) {
				sig := env["signatures"].([]any)[0].(map[string]any)
				raw, _ := base64.StdEncoding.DecodeString(sig["sig"].(string))
				raw[len(raw)-1] ^= 1
				sig["sig"] = base64.StdEncoding.EncodeToString(raw)
			})
			return d
		}, bundle.ErrSignature, bundle.TestResultFile},
		{"signed payload", func(t *testing.T, d string) string {
			rewriteAttestation(t, d, bundle.RunAttestFile, func(env map[string]any) {
				raw, _ := base64.StdEncoding.DecodeString(env["payload"].(string))
				raw = []byte(strings.Replace(string(raw), `"PASS"`, `"FAIL"`, 1))
				env["payload"] = base64.StdEncoding.EncodeToString(raw)
			})
			return d
		}, bundle.ErrSignature, bundle.RunAttestFile},
		{"attestation garbage", func(t *testing.T, d string) string {
			os.WriteFile(filepath.Join(d, bundle.TestResultFile), []byte("\x00garbage"), 0o644)
			return d
		}, bundle.ErrMalformed, bundle.TestResultFile},
		{"attestation truncated", func(t *testing.T, d string) string {
			p := filepath.Join(d, bundle.RunAttestFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)/2], 0o644)
			return d
		}, bundle.ErrMalformed, bundle.RunAttestFile},
		{"attestation removed (unsigned)", func(t *testing.T, d string) string {
			os.Remove(filepath.Join(d, bundle.TestResultFile))
			return d
		}, bundle.ErrUnsigned, bundle.TestResultFile},
		{"no attestations at all", func(t *testing.T, d string) string {
			os.RemoveAll(filepath.Join(d, bundle.AttestDir))
			return d
		}, bundle.ErrUnsigned, bundle.TestResultFile},
		{"swapped attestation", func(t *testing.T, d string) string {
			b, _ := os.ReadFile(filepath.Join(other, bundle.TestResultFile))
			os.WriteFile(filepath.Join(d, bundle.TestResultFile), b, 0o644)
			return d
		}, bundle.ErrStatement, bundle.RunAttestFile},
		{"both attestations swapped", func(t *testing.T, d string) string {
			for _, f := range []string{bundle.TestResultFile, bundle.RunAttestFile} {
				b, _ := os.ReadFile(filepath.Join(other, f))
				os.WriteFile(filepath.Join(d, f), b, 0o644)
			}
			return d
		}, bundle.ErrDigest, bundle.SumsFile},
		{"added evidence file", func(t *testing.T, d string) string {
			os.WriteFile(filepath.Join(d, "traces", "extra.jsonl"), []byte("{}\n"), 0o644)
			return d
		}, bundle.ErrExtraFile, "traces/extra.jsonl"},
		{"added attestation", func(t *testing.T, d string) string {
			os.WriteFile(filepath.Join(d, bundle.AttestDir, "more.json"), []byte("{}"), 0o644)
			return d
		}, bundle.ErrExtraFile, "attestations/more.json"},
		{"added symlink", func(t *testing.T, d string) string {
			os.Symlink("/etc/passwd", filepath.Join(d, "traces", "link"))
			return d
		}, bundle.ErrUnsafePath, "traces/link"},
		{"removed trace", func(t *testing.T, d string) string {
			os.Remove(filepath.Join(d, "traces", "probe-attempts.jsonl"))
			return d
		}, bundle.ErrMissingFile, "traces/probe-attempts.jsonl"},
		{"partial folder name", func(t *testing.T, d string) string {
			p := filepath.Join(filepath.Dir(d), ".run-1"+bundle.PartialSuffix)
			if err := os.Rename(d, p); err != nil {
				t.Fatal(err)
			}
			return p
		}, bundle.ErrPartial, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.mutate(t, sealed(t))
			_, err := bundle.Verify(context.Background(), dir, v)
			var be *bundle.Error
			if !errors.As(err, &be) {
				t.Fatalf("Verify = %v, want *bundle.Error", err)
			}
			if !errors.Is(err, tc.wantKind) || be.File != tc.wantFile {
				t.Fatalf("Verify = %v\nwant kind %q naming %q", err, tc.wantKind, tc.wantFile)
			}
		})
	}
}
