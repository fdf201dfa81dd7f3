package bundle_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"

	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
	"github.com/gatehouse-dev/gatehouse/evidence/keys"
)

// cosignVersion is the CLI scripts/cosign.sh builds from the module proxy.
const cosignVersion = "v2.6.5"

// cosignBinary finds the cosign CLI: $GATEHOUSE_COSIGN, else the cache that
// scripts/cosign.sh fills. It never builds (that takes minutes).
func cosignBinary(t *testing.T) string {
	if p := os.Getenv("GATEHOUSE_COSIGN"); p != "" {
		return p
	}
	cache := os.Getenv("GATEHOUSE_CACHE")
	if cache == "" {
		cache = "/var/cache/gatehouse"
	}
	p := filepath.Join(cache, "cosign-"+cosignVersion, "cosign")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("cosign CLI not found: GATEHOUSE_COSIGN is unset and %s does not exist; run scripts/cosign.sh to build it", p)
	}
	return p
}

func runCosign(t *testing.T, bin, dir string, args ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	// Offline: no TUF refresh, no network. The key password comes from the
	// environment, as in CI.
	cmd.Env = append(os.Environ(), "COSIGN_PASSWORD=interop-pw", "SIGSTORE_NO_CACHE=true", "TUF_ROOT="+filepath.Join(dir, "tuf"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("cosign %v: err=%v\n%s", args, err, out.String())
	return err
}

// TestCosignInterop: a key from `cosign generate-key-pair` signs our
// bundle, and the cosign CLI verifies our attestation offline.
func TestCosignInterop(t *testing.T) {
	bin := cosignBinary(t)
	work := t.TempDir()
	if err := runCosign(t, bin, work, "generate-key-pair"); err != nil {
		t.Fatalf("cosign generate-key-pair: %v", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(work, "cosign.key"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := keys.LoadSigner(keyPEM, []byte("interop-pw"))
	if err != nil {
		t.Fatalf("load cosign-made key: %v", err)
	}
	dir := filepath.Join(work, "run-1")
	writeRun(t, dir, 2, 5, testImage)
	if err := bundle.Seal(context.Background(), dir, s); err != nil {
		t.Fatal(err)
	}
	v, err := keys.LoadVerifierFile(filepath.Join(work, "cosign.pub"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bundle.Verify(context.Background(), dir, v); err != nil {
		t.Fatalf("our Verify with cosign.pub: %v", err)
	}
	if err := runCosign(t, bin, work, "trusted-root", "create", "--out", "tr.json"); err != nil {
		t.Fatalf("cosign trusted-root create: %v", err)
	}
	verify := func(pub, file string) error {
		return runCosign(t, bin, work, "verify-blob-attestation", "--key", pub,
			"--insecure-ignore-tlog", "--trusted-root", "tr.json",
			"--bundle", filepath.Join(dir, bundle.TestResultFile),
			"--type", bundle.TestResultType, file)
	}
	if err := verify("cosign.pub", filepath.Join(dir, "run.json")); err != nil {
		t.Fatalf("cosign verify-blob-attestation refused our bundle: %v", err)
	}
	if err := verify("cosign.pub", filepath.Join(dir, bundle.SumsFile)); err != nil {
		t.Fatalf("cosign verify-blob-attestation on SHA256SUMS: %v", err)
	}
	// The CLI must also refuse: a file that is not a subject, and a wrong key.
	if err := os.WriteFile(filepath.Join(work, "other.txt"), []byte("not evidence"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := verify("cosign.pub", filepath.Join(work, "other.txt")); err == nil {
		t.Fatal("cosign accepted a file that is not a subject")
	}
	_, _, otherPub := testKeys(t)
	if err := os.WriteFile(filepath.Join(work, "other.pub"), otherPub, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := verify("other.pub", filepath.Join(dir, "run.json")); err == nil {
		t.Fatal("cosign accepted our bundle with the wrong key")
	}
}

// TestCosignSignsWeVerify: an attestation made by `cosign attest-blob` with
// a cosign key verifies with our key verifier, and not with another key.
func TestCosignSignsWeVerify(t *testing.T) {
	bin := cosignBinary(t)
	work := t.TempDir()
	if err := runCosign(t, bin, work, "generate-key-pair"); err != nil {
		t.Fatalf("cosign generate-key-pair: %v", err)
	}
	for name, body := range map[string]string{"f.txt": "evidence\n", "p.json": `{"result":"PASSED"}`} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := runCosign(t, bin, work, "attest-blob", "--key", "cosign.key", "--predicate", "p.json",
		"--type", bundle.TestResultType, "--bundle", "out.json", "--new-bundle-format",
		"--tlog-upload=false", "-y", "f.txt"); err != nil {
		t.Fatalf("cosign attest-blob: %v", err)
	}
	b, err := sgbundle.LoadJSONFromPath(filepath.Join(work, "out.json"))
	if err != nil {
		t.Fatalf("load cosign bundle: %v", err)
	}
	v, err := keys.LoadVerifierFile(filepath.Join(work, "cosign.pub"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.VerifyBundle(context.Background(), b); err != nil {
		t.Fatalf("our verifier refused cosign's bundle: %v", err)
	}
	_, other, _ := testKeys(t)
	if _, err := other.VerifyBundle(context.Background(), b); err == nil {
		t.Fatal("a different key verified cosign's bundle")
	}
}
