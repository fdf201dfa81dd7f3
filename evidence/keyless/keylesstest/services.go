package keylesstest

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	ssldsse "github.com/secure-systems-lab/go-securesystemslib/dsse"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"google.golang.org/protobuf/proto"
)

// leafKey is the private key the virtual CA certified, as a sign.Keypair
// (ECDSA P-256, SHA-256: what sign.NewEphemeralKeypair makes by default).
type leafKey struct {
	priv *ecdsa.PrivateKey
	hint []byte
}

func newLeafKey(priv *ecdsa.PrivateKey) (*leafKey, error) {
	der, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		return nil, fmt.Errorf("keylesstest: %w", err)
	}
	sum := sha256.Sum256(der)
	return &leafKey{priv: priv, hint: []byte(base64.StdEncoding.EncodeToString(sum[:]))}, nil
}

func (k *leafKey) GetHashAlgorithm() protocommon.HashAlgorithm {
	return protocommon.HashAlgorithm_SHA2_256
}
func (k *leafKey) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256
}
func (k *leafKey) GetHint() []byte                { return k.hint }
func (k *leafKey) GetKeyAlgorithm() string        { return "ECDSA" }
func (k *leafKey) GetPublicKey() crypto.PublicKey { return k.priv.Public() }
func (k *leafKey) GetPublicKeyPem() (string, error) {
	b, err := cryptoutils.MarshalPublicKeyToPEM(k.priv.Public())
	return string(b), err
}
func (k *leafKey) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	d := sha256.Sum256(data)
	sig, err := ecdsa.SignASN1(rand.Reader, k.priv, d[:])
	return sig, d[:], err
}

// fulcio stands in for Fulcio: it certifies only the key it was made for,
// and only for the test token, as Fulcio binds a token to a proven key.
type fulcio struct{ cert *x509.Certificate }

func (f *fulcio) GetCertificate(_ context.Context, kp sign.Keypair, opts *sign.CertificateProviderOptions) ([]byte, error) {
	if opts == nil || opts.IDToken != Token {
		return nil, errors.New("virtual fulcio: unauthorized: wrong or missing OIDC token")
	}
	if err := cryptoutils.EqualKeys(kp.GetPublicKey(), f.cert.PublicKey); err != nil {
		return nil, fmt.Errorf("virtual fulcio: key is not the one this certificate is for: %w", err)
	}
	return f.cert.Raw, nil
}

// rekor stands in for Rekor v1: it makes a dsse entry for the bundle's
// envelope and certificate, with a signed entry timestamp (the inclusion
// promise) and an inclusion proof, as the public-good log returns them.
type rekor struct{ vs *ca.VirtualSigstore }

func (r *rekor) GetTransparencyLogEntry(_ context.Context, certPEM []byte, b *protobundle.Bundle) error {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return errors.New("virtual rekor: want a certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return fmt.Errorf("virtual rekor: %w", err)
	}
	pe := b.GetDsseEnvelope()
	if pe == nil || len(pe.GetSignatures()) != 1 {
		return errors.New("virtual rekor: want a DSSE envelope with one signature")
	}
	sig := pe.GetSignatures()[0].GetSig()
	env := &ssldsse.Envelope{PayloadType: pe.GetPayloadType(), Payload: base64.StdEncoding.EncodeToString(pe.GetPayload()),
		Signatures: []ssldsse.Signature{{KeyID: pe.GetSignatures()[0].GetKeyid(), Sig: base64.StdEncoding.EncodeToString(sig)}}}
	entry, err := r.vs.GenerateTlogEntry(cert, env, sig, time.Now().Unix(), true)
	if err != nil {
		return fmt.Errorf("virtual rekor: %w", err)
	}
	tle, ok := proto.Clone(entry.TransparencyLogEntry()).(*protorekor.TransparencyLogEntry)
	if !ok {
		return errors.New("virtual rekor: clone entry")
	}
	// tlog.NewEntry keeps the promise and kind out of the proto; a bundle
	// carries them, so add them as Rekor's response would.
	tle.KindVersion = &protorekor.KindVersion{Kind: "dsse", Version: "0.0.1"}
	set, err := r.vs.RekorSignPayload(tlog.RekorPayload{Body: base64.StdEncoding.EncodeToString(tle.GetCanonicalizedBody()),
		IntegratedTime: tle.GetIntegratedTime(), LogIndex: tle.GetLogIndex(), LogID: hex.EncodeToString(tle.GetLogId().GetKeyId())})
	if err != nil {
		return fmt.Errorf("virtual rekor: %w", err)
	}
	tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
	if !bytes.Equal(cert.Raw, b.GetVerificationMaterial().GetCertificate().GetRawBytes()) {
		return errors.New("virtual rekor: the entry's certificate is not the bundle's")
	}
	b.VerificationMaterial.TlogEntries = append(b.VerificationMaterial.TlogEntries, tle)
	return nil
}
