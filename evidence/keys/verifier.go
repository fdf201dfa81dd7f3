package keys

import (
	"context"
	"crypto"
	"fmt"
	"os"
	"time"

	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"
)

// Verifier checks Sigstore bundles against one public key, fully offline:
// no transparency log, no timestamps (a key has no validity window here).
type Verifier struct {
	pub    crypto.PublicKey
	fprint string
	v      *verify.Verifier
}

// NewVerifier builds an offline verifier for a PEM public key (cosign.pub).
func NewVerifier(pubPEM []byte) (*Verifier, error) {
	pub, err := ParsePublic(pubPEM)
	if err != nil {
		return nil, err
	}
	alg, err := algorithmFor(pub)
	if err != nil {
		return nil, err
	}
	sv, err := signature.LoadVerifierFromAlgorithmDetails(pub, alg)
	if err != nil {
		return nil, fmt.Errorf("keys: load verifier: %w", err)
	}
	// The key is trusted whatever hint the bundle carries: the hint is
	// unsigned, so we never let it choose the key; a wrong key simply fails
	// the signature check.
	key := root.NewExpiringKey(sv, time.Time{}, time.Time{})
	tm := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return key, nil })
	v, err := verify.NewVerifier(tm, verify.WithNoObserverTimestamps())
	if err != nil {
		return nil, fmt.Errorf("keys: new verifier: %w", err)
	}
	fp, err := Fingerprint(pub)
	if err != nil {
		return nil, err
	}
	return &Verifier{pub: pub, fprint: fp, v: v}, nil
}

// LoadVerifierFile reads cosign.pub and builds a Verifier.
func LoadVerifierFile(path string) (*Verifier, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	return NewVerifier(b)
}

// Fingerprint is "sha256:<hex>" of the public key.
func (v *Verifier) Fingerprint() string { return v.fprint }

// Identity names the expected signer, for the index and reports.
func (v *Verifier) Identity() string { return "key " + v.fprint }

// VerifyBundle checks the bundle's signature with the key. The artifact
// (subjects) check is the caller's: it re-hashes the files itself so that it
// can name the one that differs.
func (v *Verifier) VerifyBundle(_ context.Context, b *sgbundle.Bundle) (*verify.VerificationResult, error) {
	res, err := v.v.Verify(b, verify.NewPolicy(verify.WithoutArtifactUnsafe(), verify.WithKey()))
	if err != nil {
		return nil, fmt.Errorf("keys: verify: %w", err)
	}
	return res, nil
}
