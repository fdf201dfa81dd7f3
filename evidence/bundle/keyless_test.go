package bundle_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
	"github.com/gatehouse-dev/gatehouse/evidence/keyless"
	"github.com/gatehouse-dev/gatehouse/evidence/keyless/keylesstest"
	"github.com/gatehouse-dev/gatehouse/evidence/keys"
)

const (
	ciIdentity = "ci@gatehouse.test"
	ciIssuer   = "https://token.actions.githubusercontent.com"
)

// keylessSealed seals a run folder with the production keyless Signer, its
// Fulcio and Rekor being the in-process virtual Sigstore.
func keylessSealed(t *testing.T, vs *keylesstest.Virtual) string {
	t.Helper()
	tr, err := vs.TrustedRoot(false)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := vs.Services(ciIdentity, ciIssuer)
	if err != nil {
		t.Fatal(err)
	}
	s, err := keyless.NewSigner(svc, tr)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run-k")
	writeRun(t, dir, 2, 5, testImage)
	if err := bundle.Seal(context.Background(), dir, s); err != nil {
		t.Fatalf("keyless Seal: %v", err)
	}
	if got := s.Identity(); !strings.Contains(got, ciIdentity) || !strings.Contains(got, ciIssuer) {
		t.Errorf("signer identity %q lacks the certificate identity", got)
	}
	return dir
}

func TestKeylessRoundTrip(t *testing.T) {
	vs, err := keylesstest.New()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dir := keylessSealed(t, vs)
	trFile := filepath.Join(t.TempDir(), "trusted_root.json")
	tr, err := vs.WriteTrustedRoot(trFile, false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, bundle.TestResultFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"certificate"`, `"tlogEntries"`, `"inclusionPromise"`, `"inclusionProof"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("keyless bundle lacks %s", want)
		}
	}
	v, err := keyless.NewVerifier(tr, ciIdentity, ciIssuer)
	if err != nil {
		t.Fatal(err)
	}
	got, err := bundle.Verify(ctx, dir, v)
	if err != nil {
		t.Fatalf("keyless Verify: %v", err)
	}
	if !strings.Contains(got.Signer, ciIdentity) || got.Run.ID != "run-k" {
		t.Errorf("Verified = signer %q, run %q", got.Signer, got.Run.ID)
	}

	other, err := keylesstest.New()
	if err != nil {
		t.Fatal(err)
	}
	otherRoot, err := other.TrustedRoot(false)
	if err != nil {
		t.Fatal(err)
	}
	withCT, err := vs.TrustedRoot(true)
	if err != nil {
		t.Fatal(err)
	}
	_, _, otherPub := testKeys(t)
	keyV, err := keys.NewVerifier(otherPub)
	if err != nil {
		t.Fatal(err)
	}
	refuse := []struct {
		name, identity, issuer, want string
		root                         *root.TrustedRoot
	}{
		{"wrong identity", "someone@else.test", ciIssuer, `certificate identity is "` + ciIdentity + `"`, nil},
		{"wrong issuer", ciIdentity, "https://accounts.google.com", `(issuer "` + ciIssuer + `")`, nil},
		{"another deployment's trusted root", ciIdentity, ciIssuer, "transparency log", otherRoot},
		{"SCT required when the root lists CT logs", ciIdentity, ciIssuer, "SCT", withCT},
	}
	for _, tt := range refuse {
		t.Run(tt.name, func(t *testing.T) {
			r := tr
			if tt.root != nil {
				r = tt.root
			}
			v, err := keyless.NewVerifier(r, tt.identity, tt.issuer)
			if err != nil {
				t.Fatal(err)
			}
			_, err = bundle.Verify(ctx, dir, v)
			if !errors.Is(err, bundle.ErrSignature) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Verify = %v, want ErrSignature mentioning %q", err, tt.want)
			}
		})
	}
	t.Run("a cosign key does not verify a keyless bundle", func(t *testing.T) {
		if _, err := bundle.Verify(ctx, dir, keyV); !errors.Is(err, bundle.ErrSignature) {
			t.Fatalf("Verify with a key = %v, want ErrSignature", err)
		}
	})
	t.Run("keyless does not verify a key-signed bundle", func(t *testing.T) {
		if _, err := bundle.Verify(ctx, sealed(t), v); !errors.Is(err, bundle.ErrSignature) {
			t.Fatalf("Verify key-signed = %v, want ErrSignature", err)
		}
	})
	t.Run("log entry removed", func(t *testing.T) {
		c := filepath.Join(t.TempDir(), "run-k")
		if err := os.CopyFS(c, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(c, filepath.FromSlash(bundle.RunAttestFile))
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		delete(m["verificationMaterial"].(map[string]any), "tlogEntries")
		raw, _ = json.Marshal(m)
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		var be *bundle.Error
		if _, err := bundle.Verify(ctx, c, v); err == nil || !errors.As(err, &be) || be.File != bundle.RunAttestFile {
			t.Fatalf("no log entry: %v, want a refusal naming %s", err, bundle.RunAttestFile)
		}
	})
	t.Run("tampered file", func(t *testing.T) {
		c := filepath.Join(t.TempDir(), "run-k")
		if err := os.CopyFS(c, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		flip(t, c, "traces/endpoint-hits.jsonl", 10)
		var be *bundle.Error
		if _, err := bundle.Verify(ctx, c, v); !errors.Is(err, bundle.ErrDigest) || !errors.As(err, &be) || be.File != "traces/endpoint-hits.jsonl" {
			t.Fatalf("tampered: %v, want ErrDigest naming the trace", err)
		}
	})
}
