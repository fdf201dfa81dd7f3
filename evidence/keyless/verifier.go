package keyless

import (
	"context"
	"errors"
	"fmt"

	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// Verifier checks keyless bundles offline against a trusted root: the
// certificate chains to a Fulcio CA in the root, names exactly the expected
// identity and OIDC issuer, the signature is in a transparency log of the
// root (inclusion proof and promise checked, no network), and the log's
// integrated time falls inside the certificate's ten-minute validity. When
// the root lists certificate transparency logs (the public-good root does),
// the certificate must also carry an SCT from one of them.
type Verifier struct {
	identity, issuer string
	v                *verify.Verifier
	policy           verify.PolicyBuilder
}

// LoadTrustedRoot reads a trusted_root.json (Sigstore TrustedRoot v0.1).
func LoadTrustedRoot(path string) (*root.TrustedRoot, error) {
	tr, err := root.NewTrustedRootFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("keyless: trusted root %s: %w", path, err)
	}
	return tr, nil
}

// NewVerifier requires identity (the certificate's SAN: a workflow URI or an
// email) and issuer (the OIDC issuer URL), both matched exactly.
func NewVerifier(trusted root.TrustedMaterial, identity, issuer string) (*Verifier, error) {
	if trusted == nil || identity == "" || issuer == "" {
		return nil, errors.New("keyless: verifying needs a trusted root, a certificate identity and an OIDC issuer")
	}
	id, err := verify.NewShortCertificateIdentity(issuer, "", identity, "")
	if err != nil {
		return nil, fmt.Errorf("keyless: identity: %w", err)
	}
	opts := []verify.VerifierOption{verify.WithTransparencyLog(1), verify.WithObserverTimestamps(1)}
	if len(trusted.CTLogs()) > 0 {
		opts = append(opts, verify.WithSignedCertificateTimestamps(1))
	}
	v, err := verify.NewVerifier(trusted, opts...)
	if err != nil {
		return nil, fmt.Errorf("keyless: new verifier: %w", err)
	}
	// Subjects are the bundle package's job (it re-hashes every file and
	// names the one that differs), hence no artifact here.
	return &Verifier{identity: identity, issuer: issuer, v: v,
		policy: verify.NewPolicy(verify.WithoutArtifactUnsafe(), verify.WithCertificateIdentity(id))}, nil
}

// Identity names the required signer.
func (v *Verifier) Identity() string { return describe(v.identity, v.issuer) }

// VerifyBundle checks one Sigstore bundle. When the certificate names
// someone else, the error says who, so an auditor sees whose evidence this is.
func (v *Verifier) VerifyBundle(_ context.Context, b *sgbundle.Bundle) (*verify.VerificationResult, error) {
	res, err := v.v.Verify(b, v.policy)
	if err == nil {
		return res, nil
	}
	if got, ok := signedBy(b); ok && (got.SubjectAlternativeName != v.identity || got.Extensions.Issuer != v.issuer) {
		return nil, fmt.Errorf("keyless: certificate identity is %q (issuer %q), want %q (issuer %q): %w",
			got.SubjectAlternativeName, got.Extensions.Issuer, v.identity, v.issuer, err)
	}
	return nil, fmt.Errorf("keyless: verify as %s: %w", v.Identity(), err)
}

// signedBy reads the (unverified) certificate identity, for messages only.
func signedBy(b *sgbundle.Bundle) (certificate.Summary, bool) {
	vc, err := b.VerificationContent()
	if err != nil || vc.Certificate() == nil {
		return certificate.Summary{}, false
	}
	s, err := certificate.SummarizeCertificate(vc.Certificate())
	return s, err == nil
}
