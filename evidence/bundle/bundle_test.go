package bundle_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
	"github.com/gatehouse-dev/gatehouse/evidence/keys"
)

const testImage = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// sealed returns a freshly sealed bundle folder named run-1.
func sealed(t *testing.T) string {
	t.Helper()
	s, _, _ := testKeys(t)
	dir := filepath.Join(t.TempDir(), "run-1")
	writeRun(t, dir, 3, 20, testImage)
	if err := bundle.Seal(context.Background(), dir, s); err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return dir
}

func TestRoundTrip(t *testing.T) {
	_, v, _ := testKeys(t)
	dir := sealed(t)
	got, err := bundle.Verify(context.Background(), dir, v)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got.Run.ID != "run-1" || len(got.Results) != 6 || got.TestResult.Result != "PASSED" {
		t.Fatalf("verified run %q, %d results, result %q", got.Run.ID, len(got.Results), got.TestResult.Result)
	}
	if len(got.TestResult.PassedTests) != 3 || got.TestResult.PassedTests[0] != "gate-00/blocks egress" {
		t.Fatalf("passedTests = %v", got.TestResult.PassedTests)
	}
	if len(got.TestResult.Configuration) != 3 {
		t.Fatalf("configuration = %v, want the 3 policy files", got.TestResult.Configuration)
	}
	if got.Signer != v.Identity() || len(got.Files) != 9 {
		t.Fatalf("signer %q, %d files", got.Signer, len(got.Files))
	}
	sums, err := os.ReadFile(filepath.Join(dir, bundle.SumsFile))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := bundle.ParseSums(sums)
	if err != nil || len(entries) != 9 {
		t.Fatalf("SHA256SUMS: %d entries, %v", len(entries), err)
	}
}

func TestSealRefuses(t *testing.T) {
	s, _, _ := testKeys(t)
	ctx := context.Background()
	dir := sealed(t)
	if err := bundle.Seal(ctx, dir, s); !errors.Is(err, bundle.ErrSealed) {
		t.Errorf("second Seal: %v, want ErrSealed", err)
	}
	inc := filepath.Join(t.TempDir(), "run-2")
	writeRun(t, inc, 1, 1, "")
	edit(t, inc, "run.json", `"complete": true`, `"complete": false`)
	if err := bundle.Seal(ctx, inc, s); !errors.Is(err, bundle.ErrIncomplete) {
		t.Errorf("Seal incomplete: %v, want ErrIncomplete", err)
	}
	if err := bundle.Seal(ctx, t.TempDir(), s); !errors.Is(err, bundle.ErrMissingFile) {
		t.Errorf("Seal empty folder: %v, want ErrMissingFile", err)
	}
}

// edit replaces old with new in a bundle file, failing if old is absent.
func edit(t *testing.T, dir, rel, old, new string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s does not contain %q", rel, old)
	}
	if err := os.WriteFile(p, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

func flip(t *testing.T, dir, rel string, at int) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if at < 0 {
		at = len(b) + at
	}
	b[at] ^= 0x01
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyWrongKey(t *testing.T) {
	_, _, other := testKeys(t)
	v, err := keys.NewVerifier(other)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bundle.Verify(context.Background(), sealed(t), v)
	var be *bundle.Error
	if !errors.Is(err, bundle.ErrSignature) || !errors.As(err, &be) || !strings.HasPrefix(be.File, "attestations/") {
		t.Fatalf("wrong key: %v, want ErrSignature naming an attestation", err)
	}
}
