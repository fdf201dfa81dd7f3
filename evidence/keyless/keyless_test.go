package keyless_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"

	"github.com/gatehouse-dev/gatehouse/evidence/keyless"
	"github.com/gatehouse-dev/gatehouse/evidence/keyless/keylesstest"
)

const (
	identity = "release@gatehouse.test"
	issuer   = "https://issuer.gatehouse.test"
	inToto   = "application/vnd.in-toto+json"
)

// statement is a minimal in-toto Statement v1 with one subject; sign.Bundle
// checks the payload is one when it verifies right after signing.
func statement(name string) []byte {
	return []byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"` + name +
		`","digest":{"sha256":"` + strings.Repeat("ab", 32) + `"}}],"predicateType":"https://example.test/p","predicate":{}}`)
}

func virtualSigner(t *testing.T) (*keylesstest.Virtual, keyless.Services, *keyless.Signer) {
	t.Helper()
	vs, err := keylesstest.New()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := vs.TrustedRoot(false)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := vs.Services(identity, issuer)
	if err != nil {
		t.Fatal(err)
	}
	s, err := keyless.NewSigner(svc, tr)
	if err != nil {
		t.Fatal(err)
	}
	return vs, svc, s
}

// TestSignerReusesOneCertificate: both attestations of a run carry the same
// certificate, each its own log entry, and both verify.
func TestSignerReusesOneCertificate(t *testing.T) {
	vs, _, s := virtualSigner(t)
	if _, err := s.Verifier(); err == nil {
		t.Error("Verifier before any signature: want an error")
	}
	ctx := context.Background()
	tr, err := vs.WriteTrustedRoot(filepath.Join(t.TempDir(), "trusted_root.json"), false)
	if err != nil {
		t.Fatal(err)
	}
	v, err := keyless.NewVerifier(tr, identity, issuer)
	if err != nil {
		t.Fatal(err)
	}
	var certs []string
	for _, payload := range []string{"a", "b"} {
		pb, err := s.SignDSSE(ctx, inToto, statement(payload))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(pb.GetVerificationMaterial().GetTlogEntries()); n != 1 {
			t.Errorf("%d log entries, want 1", n)
		}
		certs = append(certs, string(pb.GetVerificationMaterial().GetCertificate().GetRawBytes()))
		b, err := sgbundle.NewBundle(pb)
		if err != nil {
			t.Fatal(err)
		}
		res, err := v.VerifyBundle(ctx, b)
		if err != nil {
			t.Fatalf("VerifyBundle: %v", err)
		}
		if res.Signature == nil || res.Signature.Certificate == nil || res.Signature.Certificate.SubjectAlternativeName != identity {
			t.Errorf("result names no certificate identity: %+v", res.Signature)
		}
		if len(res.VerifiedTimestamps) == 0 {
			t.Error("no verified (log integrated) timestamp")
		}
	}
	if certs[0] != certs[1] {
		t.Error("two certificates for one run: want one, reused")
	}
	if !strings.HasPrefix(s.Fingerprint(), "keyless:"+identity) {
		t.Errorf("Fingerprint %q", s.Fingerprint())
	}
	sv, err := s.Verifier()
	if err != nil || sv.Identity() != v.Identity() {
		t.Errorf("self verifier %v (%v), want %s", sv, err, v.Identity())
	}
}

func TestSignerRefusals(t *testing.T) {
	vs, svc, _ := virtualSigner(t)
	tr, err := vs.TrustedRoot(false)
	if err != nil {
		t.Fatal(err)
	}
	noLog := svc
	noLog.Logs = nil
	if _, err := keyless.NewSigner(noLog, tr); err == nil || !strings.Contains(err.Error(), "transparency log") {
		t.Errorf("signer without a log: %v", err)
	}
	if _, err := keyless.NewSigner(svc, nil); err == nil {
		t.Error("signer without a trusted root: want an error")
	}
	ctx := context.Background()

	t.Run("wrong token is refused by the CA", func(t *testing.T) {
		bad := svc
		bad.Token = func() (string, error) { return "a.b.c", nil }
		s, err := keyless.NewSigner(bad, tr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SignDSSE(ctx, inToto, statement("x")); err == nil || !strings.Contains(err.Error(), "unauthorized") {
			t.Errorf("SignDSSE with a wrong token: %v", err)
		}
	})
	t.Run("token from SIGSTORE_ID_TOKEN reaches the CA", func(t *testing.T) {
		t.Setenv(keyless.TokenEnv, keylesstest.Token+"\n")
		env := svc
		env.Token = keyless.Token("")
		s, err := keyless.NewSigner(env, tr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SignDSSE(ctx, inToto, statement("x")); err != nil {
			t.Errorf("SignDSSE with the env token: %v", err)
		}
	})
	t.Run("a certificate for another key is refused", func(t *testing.T) {
		other, err := vs.Services(identity, issuer)
		if err != nil {
			t.Fatal(err)
		}
		mixed := svc
		mixed.Certificates = other.Certificates
		s, err := keyless.NewSigner(mixed, tr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SignDSSE(ctx, inToto, statement("x")); err == nil {
			t.Error("signed with a certificate for another key")
		}
	})
}

func TestToken(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "tok")
	if err := os.WriteFile(good, []byte("h.p.s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	notJWT := filepath.Join(dir, "bad")
	if err := os.WriteFile(notJWT, []byte("opaque"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(keyless.TokenEnv, "")
	if tok, err := keyless.Token(good)(); err != nil || tok != "h.p.s" {
		t.Errorf("file token = %q, %v", tok, err)
	}
	if _, err := keyless.Token("")(); !errors.Is(err, keyless.ErrNoToken) {
		t.Errorf("no token: %v, want ErrNoToken", err)
	}
	if _, err := keyless.Token(notJWT)(); err == nil || !strings.Contains(err.Error(), "JWT") {
		t.Errorf("opaque token: %v", err)
	}
	if _, err := keyless.Token(filepath.Join(dir, "none"))(); err == nil {
		t.Error("missing token file: want an error")
	}
}

// TestPublicGoodNeedsTokenFirst: without a token the public-good signer
// fails before any request. The URLs point at a closed loopback port so a
// bug could not send anything off this machine.
func TestPublicGoodNeedsTokenFirst(t *testing.T) {
	t.Setenv(keyless.TokenEnv, "")
	svc, err := keyless.PublicGood(keyless.Config{FulcioURL: "http://127.0.0.1:1", RekorURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := keylesstest.New()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := vs.TrustedRoot(false)
	if err != nil {
		t.Fatal(err)
	}
	s, err := keyless.NewSigner(svc, tr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SignDSSE(context.Background(), inToto, statement("x")); !errors.Is(err, keyless.ErrNoToken) {
		t.Errorf("SignDSSE without a token: %v, want ErrNoToken", err)
	}
}

func TestNewVerifierNeedsIdentity(t *testing.T) {
	vs, err := keylesstest.New()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := vs.TrustedRoot(false)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]string{{"", issuer}, {identity, ""}} {
		if _, err := keyless.NewVerifier(tr, c[0], c[1]); err == nil {
			t.Errorf("NewVerifier(%q, %q): want an error", c[0], c[1])
		}
	}
	if _, err := keyless.LoadTrustedRoot(filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Error("LoadTrustedRoot of a missing file: want an error")
	}
}
