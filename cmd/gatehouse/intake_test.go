package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab/intake"
	"github.com/gatehouse-dev/gatehouse/internal/lab/intake/contract"
)

// The reference service through the whole verb: its token command is this
// test binary as gatehouse ("intake mint"), the run folder is sealed with a
// key and verifies, and every check PASSes (exit 0).
func TestIntakeReferenceSignedRun(t *testing.T) {
	t.Setenv(asGatehouse, "1") // the token command runs this binary as gatehouse
	t.Setenv("COSIGN_PASSWORD", "intake-test")
	ctx := context.Background()
	dir := t.TempDir()
	prefix := filepath.Join(dir, "ci")
	if r := gatehouse(t, ctx, "keys", "generate", "--out", prefix); r.code != exitOK {
		t.Fatalf("keys generate: exit %d: %s", r.code, r.stderr)
	}
	out := filepath.Join(dir, "runs")
	r := gatehouse(t, ctx, "intake", "--reference", "--out", out, "--key", prefix+".key")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	m := regexp.MustCompile(`(?m)^evidence: (.+)$`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no evidence line in\n%s", r.stdout)
	}
	var results []evidence.Result
	b, err := os.ReadFile(filepath.Join(m[1], "results.json"))
	if err == nil {
		err = json.Unmarshal(b, &results)
	}
	if err != nil || len(results) != len(contract.Checks) {
		t.Fatalf("results: %v, %d of %d", err, len(results), len(contract.Checks))
	}
	for _, res := range results {
		if res.Verdict != evidence.Pass || len(res.Findings) == 0 {
			t.Errorf("%s: %s with %d findings", res.Scenario, res.Verdict, len(res.Findings))
		}
	}
	if v := gatehouse(t, ctx, "verify", "--key", prefix+".pub", m[1]); v.code != exitOK {
		t.Fatalf("verify: exit %d\n%s\n%s", v.code, v.stdout, v.stderr)
	}
	ex, err := os.ReadFile(filepath.Join(m[1], "traces", "intake-exchanges.jsonl"))
	if err != nil || !bytes.Contains(ex, []byte(`"check":"expired-token-refused"`)) {
		t.Fatalf("exchanges trace: %v", err)
	}
}

// A broken service fails the gate: exit 1, the failing check named with
// the request that proved it.
func TestIntakeBrokenVariantExitsOne(t *testing.T) {
	for _, tc := range []struct {
		v     intake.Variant
		check string
	}{
		{intake.AcceptsExtraFields, contract.CheckExtraField},
		{intake.AcceptsOtherReport, contract.CheckOtherReport},
		{intake.WritesAfterFinalise, contract.CheckWriteFinalised},
		{intake.HonoursExpiredToken, contract.CheckExpiredToken},
	} {
		t.Run(string(tc.v), func(t *testing.T) {
			m, _ := intake.NewMinter(intake.MinterOptions{})
			svc, _ := intake.New(intake.Options{Key: m.PublicKey(), Broken: tc.v})
			srv := httptest.NewServer(svc)
			defer srv.Close()
			var so bytes.Buffer
			o := contract.Options{BaseURL: srv.URL, Contract: contract.Reference(), Mint: contract.MinterMint(m),
				ExpiredTTL: time.Second, ExpiryWait: 2 * time.Second}
			err := intakeGate(context.Background(), runFlags{out: t.TempDir()}, nil, "broken", "", []byte("reference\n"), o, &so)
			var se bytes.Buffer
			if code := report(err, &se); code != exitViolation {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, exitViolation, so.String(), se.String())
			}
			fails := regexp.MustCompile(`(?m)^(\S+)\s+FAIL\b`).FindAllStringSubmatch(so.String(), -1)
			if len(fails) != 1 || fails[0][1] != tc.check {
				t.Fatalf("failing checks %v, want only %s\n%s", fails, tc.check, so.String())
			}
			if !strings.Contains(so.String(), "proved by: ") {
				t.Fatalf("no proving request printed\n%s", so.String())
			}
		})
	}
}

func TestIntakeUsageErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("operations:\n  read-report: {method: GET, path: /r}\nfieldz: {}\n"), 0o644)
	for _, args := range [][]string{
		{"intake"},
		{"intake", "--url", "http://127.0.0.1:1"},
		{"intake", "--reference", "--url", "http://127.0.0.1:1"},
		{"intake", "--reference", "extra"},
		{"intake", "--url", "http://127.0.0.1:1", "--token-cmd", "true", "--contract", bad},
		{"intake", "--url", "http://127.0.0.1:1", "--token-cmd", "true", "--contract", "/nonexistent.yaml"},
		{"intake", "--bogus"},
		{"intake", "mint", "--run", "r"},
	} {
		r := gatehouse(t, context.Background(), args...)
		if r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", args, r.code, exitUsage, r.stderr)
		}
	}
}
