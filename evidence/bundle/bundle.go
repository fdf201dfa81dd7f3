// Package bundle seals a run folder into a signed evidence bundle and
// verifies one offline. A bundle is the run folder plus SHA256SUMS and, under
// attestations/, two Sigstore bundles (v0.3, DSSE) of in-toto Statements v1:
// the standard test-result predicate and our own per-gate run predicate.
package bundle

import (
	"context"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// File names inside a bundle, besides the run folder's own
// (evidence.RunFile, evidence.ResultsFile, ...).
const (
	SumsFile        = "SHA256SUMS"
	AttestDir       = "attestations"
	TestResultFile  = AttestDir + "/test-result.sigstore.json"
	RunAttestFile   = AttestDir + "/gatehouse-run.sigstore.json"
	PartialSuffix   = ".partial"
	InTotoPayload   = "application/vnd.in-toto+json"
	StatementType   = "https://in-toto.io/Statement/v1"
	TestResultType  = "https://in-toto.io/attestation/test-result/v0.1"
	RunPredicateV1  = "https://gatehouse.dev/run/v1"
	maxMetadataSize = 64 << 20 // run.json, results.json, SHA256SUMS, attestations
)

// Signer turns a DSSE payload into a signed Sigstore bundle. A key signer
// (keys.Signer) embeds a public key hint; a keyless signer
// (keyless.Signer) fetches a Fulcio certificate and a Rekor entry.
type Signer interface {
	SignDSSE(ctx context.Context, payloadType string, payload []byte) (*protobundle.Bundle, error)
	Identity() string
}

// Verifier checks the signature (and, for keyless, certificate identity,
// log inclusion and timestamps) of one Sigstore bundle. Subjects are checked
// by this package, not by the Verifier.
type Verifier interface {
	VerifyBundle(ctx context.Context, b *sgbundle.Bundle) (*verify.VerificationResult, error)
	Identity() string
}
