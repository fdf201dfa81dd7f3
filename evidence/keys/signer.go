package keys

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/sigstore/cosign/v2/pkg/cosign"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// Signer signs with a cosign private key. It is also a sigstore-go
// sign.Keypair, which is how sigstore-go accepts a key it did not make.
type Signer struct {
	sv     signature.SignerVerifier
	pub    crypto.PublicKey
	alg    signature.AlgorithmDetails
	hint   []byte
	fprint string
}

var _ sign.Keypair = (*Signer)(nil)

// LoadSigner decrypts a cosign private key. Decryption (scrypt) takes
// seconds: load once per run.
func LoadSigner(keyPEM, password []byte) (*Signer, error) {
	sv, err := cosign.LoadPrivateKey(keyPEM, password, nil)
	if err != nil {
		return nil, fmt.Errorf("keys: load private key: %w", err)
	}
	pub, err := sv.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("keys: load private key: %w", err)
	}
	alg, err := algorithmFor(pub)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("keys: load private key: %w", err)
	}
	sum := sha256.Sum256(der)
	fp, _ := Fingerprint(pub)
	return &Signer{sv: sv, pub: pub, alg: alg,
		hint: []byte(base64.StdEncoding.EncodeToString(sum[:])), fprint: fp}, nil
}

// LoadSignerFile decrypts the key file at path with the password in
// COSIGN_PASSWORD, once per process and before anything is started: the
// password is taken out of the environment first (TakePassword), whatever
// happens next, then the password and the file's bytes are cleared, and
// the process is made not dumpable. Only the decrypted key stays, in this
// process's memory.
func LoadSignerFile(path string) (*Signer, error) {
	pw, err := TakePassword()
	if err != nil {
		return nil, err
	}
	defer clear(pw)
	b, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	defer clear(b)
	if err := protect(); err != nil {
		return nil, err
	}
	return LoadSigner(b, pw)
}

// maxKeyFile bounds a key file (cosign's are under 1 KiB).
const maxKeyFile = 64 << 10

// readKeyFile reads a regular file of at most maxKeyFile bytes; a FIFO or a
// device in its place is refused without blocking.
func readKeyFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("keys: %s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		clear(b)
		return nil, fmt.Errorf("keys: read %s: %w", path, err)
	}
	if len(b) > maxKeyFile {
		clear(b)
		return nil, fmt.Errorf("keys: %s is larger than %d bytes: not a key", path, maxKeyFile)
	}
	return b, nil
}

// algorithmFor maps a key to the signing algorithm cosign uses for it.
// Ed25519 keys are refused: cosign signs them as Ed25519ph, which sigstore-go
// verifiers do not accept for DSSE, so such a bundle would not verify.
func algorithmFor(pub crypto.PublicKey) (signature.AlgorithmDetails, error) {
	d, err := signature.GetDefaultPublicKeyDetails(pub)
	if err != nil {
		return signature.AlgorithmDetails{}, fmt.Errorf("keys: unsupported key: %w", err)
	}
	if d == protocommon.PublicKeyDetails_PKIX_ED25519 || d == protocommon.PublicKeyDetails_PKIX_ED25519_PH {
		return signature.AlgorithmDetails{}, fmt.Errorf("keys: ed25519 keys are not supported for DSSE bundles; use ECDSA (cosign's default)")
	}
	a, err := signature.GetAlgorithmDetails(d)
	if err != nil {
		return signature.AlgorithmDetails{}, fmt.Errorf("keys: unsupported key: %w", err)
	}
	return a, nil
}

// Fingerprint is "sha256:<hex>" of the public key.
func (s *Signer) Fingerprint() string { return s.fprint }

// Identity names who signed, for the index and reports.
func (s *Signer) Identity() string { return "key " + s.fprint }

// SignDSSE signs payload as a DSSE envelope and returns a Sigstore v0.3
// bundle carrying the public key hint (no certificate, no log entry).
func (s *Signer) SignDSSE(ctx context.Context, payloadType string, payload []byte) (*protobundle.Bundle, error) {
	b, err := sign.Bundle(&sign.DSSEData{Data: payload, PayloadType: payloadType}, s, sign.BundleOptions{Context: ctx})
	if err != nil {
		return nil, fmt.Errorf("keys: sign: %w", err)
	}
	return b, nil
}

func (s *Signer) GetHashAlgorithm() protocommon.HashAlgorithm { return s.alg.GetProtoHashType() }
func (s *Signer) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return s.alg.GetSignatureAlgorithm()
}
func (s *Signer) GetHint() []byte                { return s.hint }
func (s *Signer) GetPublicKey() crypto.PublicKey { return s.pub }
func (s *Signer) GetKeyAlgorithm() string {
	switch s.alg.GetKeyType() {
	case signature.ECDSA:
		return "ECDSA"
	case signature.RSA:
		return "RSA"
	}
	return ""
}

func (s *Signer) GetPublicKeyPem() (string, error) {
	b, err := cryptoutils.MarshalPublicKeyToPEM(s.pub)
	return string(b), err
}

// SignData signs data with the cosign key. sigstore-go wants the digest back
// as the second value; the cosign signer hashes internally, so we compute
// the same digest for it.
func (s *Signer) SignData(ctx context.Context, data []byte) ([]byte, []byte, error) {
	sig, err := s.sv.SignMessage(bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	h := s.alg.GetHashType().New()
	h.Write(data)
	return sig, h.Sum(nil), nil
}
