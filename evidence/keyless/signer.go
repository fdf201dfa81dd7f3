package keyless

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// Services are the outside parties of one keyless signature: an ephemeral
// key, a certificate authority that binds it to the OIDC identity, and the
// transparency logs that witness each signature. PublicGood builds the
// real ones (sigstore-go's HTTP clients); keylesstest builds in-process ones.
type Services struct {
	Keypair      sign.Keypair             // lives in memory only, for one run
	Certificates sign.CertificateProvider // Fulcio
	Logs         []sign.Transparency      // Rekor; at least one
	Token        TokenSource
}

// Config names the public-good (or a private) Sigstore deployment.
type Config struct {
	FulcioURL, RekorURL string
	TokenFile           string        // "" reads SIGSTORE_ID_TOKEN
	Timeout             time.Duration // per HTTP request; 0 means 30 s
}

// PublicGood builds Services that talk to Fulcio and Rekor over HTTP. Nothing
// is contacted until the first SignDSSE. Untested: no test reaches a network.
func PublicGood(cfg Config) (Services, error) {
	kp, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		return Services{}, fmt.Errorf("keyless: ephemeral key: %w", err)
	}
	if cfg.FulcioURL == "" {
		cfg.FulcioURL = DefaultFulcioURL
	}
	if cfg.RekorURL == "" {
		cfg.RekorURL = DefaultRekorURL
	}
	fulcio := sign.NewFulcio(&sign.FulcioOptions{BaseURL: cfg.FulcioURL, Timeout: cfg.Timeout, Retries: 1})
	rekor := sign.NewRekor(&sign.RekorOptions{BaseURL: cfg.RekorURL, Timeout: cfg.Timeout, Retries: 1})
	return Services{Keypair: kp, Certificates: fulcio, Logs: []sign.Transparency{rekor}, Token: Token(cfg.TokenFile)}, nil
}

// Signer signs DSSE payloads keylessly. One certificate is requested, on the
// first signature, and reused for the run's other attestations: a Fulcio
// certificate lives about ten minutes, longer than a seal takes.
type Signer struct {
	svc     Services
	trusted root.TrustedMaterial

	mu      sync.Mutex
	cert    []byte // DER, once issued
	summary certificate.Summary
}

// NewSigner checks the services. trusted is the trusted root the finished
// bundles must verify against; sigstore-go checks each bundle with it right
// after signing, so a bad certificate or log entry fails the seal, not a
// later verify.
func NewSigner(svc Services, trusted root.TrustedMaterial) (*Signer, error) {
	switch {
	case svc.Keypair == nil, svc.Certificates == nil, svc.Token == nil:
		return nil, errors.New("keyless: signer needs a keypair, a certificate provider and a token source")
	case len(svc.Logs) == 0:
		return nil, errors.New("keyless: signer needs a transparency log: an unlogged keyless signature cannot be verified once the certificate expires")
	case trusted == nil:
		return nil, errors.New("keyless: signer needs a trusted root")
	}
	return &Signer{svc: svc, trusted: trusted}, nil
}

// certificate obtains (once) the certificate for the ephemeral key.
func (s *Signer) certificate(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cert != nil {
		return s.cert, nil
	}
	tok, err := s.svc.Token()
	if err != nil {
		return nil, err
	}
	der, err := s.svc.Certificates.GetCertificate(ctx, s.svc.Keypair, &sign.CertificateProviderOptions{IDToken: tok})
	if err != nil {
		return nil, fmt.Errorf("keyless: certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("keyless: certificate: %w", err)
	}
	// A certificate for another key would make every signature unverifiable;
	// say so now rather than at verify time.
	if err := cryptoutils.EqualKeys(cert.PublicKey, s.svc.Keypair.GetPublicKey()); err != nil {
		return nil, fmt.Errorf("keyless: certificate is not for our key: %w", err)
	}
	sum, err := certificate.SummarizeCertificate(cert)
	if err != nil {
		return nil, fmt.Errorf("keyless: certificate: %w", err)
	}
	s.cert, s.summary = der, sum
	return der, nil
}

// SignDSSE signs payload, attaches the certificate and a log entry per
// transparency log, and verifies the result against the trusted root.
func (s *Signer) SignDSSE(ctx context.Context, payloadType string, payload []byte) (*protobundle.Bundle, error) {
	der, err := s.certificate(ctx)
	if err != nil {
		return nil, err
	}
	b, err := sign.Bundle(&sign.DSSEData{Data: payload, PayloadType: payloadType}, s.svc.Keypair, sign.BundleOptions{
		CertificateProvider: issued(der),
		TransparencyLogs:    s.svc.Logs,
		TrustedRoot:         s.trusted,
		Context:             ctx,
	})
	if err != nil {
		return nil, fmt.Errorf("keyless: sign: %w", err)
	}
	return b, nil
}

// issued hands sign.Bundle the certificate we already hold.
type issued []byte

func (c issued) GetCertificate(context.Context, sign.Keypair, *sign.CertificateProviderOptions) ([]byte, error) {
	return c, nil
}

// Identity names the certified signer once a certificate was issued.
func (s *Signer) Identity() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cert == nil {
		return "keyless (no certificate yet)"
	}
	return describe(s.summary.SubjectAlternativeName, s.summary.Extensions.Issuer)
}

// Fingerprint is what the index records as the signer: "keyless:" and the
// certificate identity.
func (s *Signer) Fingerprint() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "keyless:" + s.summary.SubjectAlternativeName
}

// Verifier verifies what this signer sealed: same trusted root, and exactly
// the identity and issuer its certificate names. Only after a signature.
func (s *Signer) Verifier() (*Verifier, error) {
	s.mu.Lock()
	sum, has := s.summary, s.cert != nil
	s.mu.Unlock()
	if !has {
		return nil, errors.New("keyless: nothing signed yet, so no certificate identity to verify against")
	}
	return NewVerifier(s.trusted, sum.SubjectAlternativeName, sum.Extensions.Issuer)
}

func describe(identity, issuer string) string {
	return fmt.Sprintf("keyless %s (issuer %s)", identity, issuer)
}
