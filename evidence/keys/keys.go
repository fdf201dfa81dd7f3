// Package keys makes and loads cosign-format key pairs through cosign's own
// key handling, so that keys from `cosign generate-key-pair` and keys from
// `gatehouse keys generate` are interchangeable.
package keys

import (
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// PasswordEnv is the variable cosign reads the private key password from.
const PasswordEnv = "COSIGN_PASSWORD"

// ErrNoPassword means COSIGN_PASSWORD is not set. We never prompt: the
// harness runs in CI, where a prompt would hang.
var ErrNoPassword = errors.New("keys: " + PasswordEnv + " is not set (set it, empty for an unencrypted key)")

// Password returns the key password from COSIGN_PASSWORD. An empty but set
// variable is a valid (empty) password, as in cosign.
func Password() ([]byte, error) {
	p, ok := os.LookupEnv(PasswordEnv)
	if !ok {
		return nil, ErrNoPassword
	}
	return []byte(p), nil
}

// Generate makes a new ECDSA P-256 key pair in cosign's format: an encrypted
// "SIGSTORE PRIVATE KEY" PEM and a PKIX public key PEM.
func Generate(password []byte) (private, public []byte, err error) {
	kb, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return password, nil })
	if err != nil {
		return nil, nil, fmt.Errorf("keys: generate: %w", err)
	}
	return kb.PrivateBytes, kb.PublicBytes, nil
}

// GenerateFiles writes <prefix>.key (0600) and <prefix>.pub, as cosign does,
// and refuses to overwrite either file.
func GenerateFiles(prefix string, password []byte) (keyPath, pubPath string, err error) {
	priv, pub, err := Generate(password)
	if err != nil {
		return "", "", err
	}
	keyPath, pubPath = prefix+".key", prefix+".pub"
	if err := writeNew(keyPath, priv, 0o600); err != nil {
		return "", "", err
	}
	if err := writeNew(pubPath, pub, 0o644); err != nil {
		_ = os.Remove(keyPath)
		return "", "", err
	}
	return keyPath, pubPath, nil
}

func writeNew(path string, b []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("keys: write %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("keys: write %s: %w", path, err)
	}
	return f.Close()
}

// Fingerprint names a public key: "sha256:" and the hex SHA-256 of its PKIX
// DER encoding. The index records it so a gate can say which key signed.
func Fingerprint(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("keys: fingerprint: %w", err)
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// ParsePublic reads a PEM public key (cosign.pub).
func ParsePublic(pemBytes []byte) (crypto.PublicKey, error) {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pemBytes)
	if err != nil {
		return nil, fmt.Errorf("keys: parse public key: %w", err)
	}
	return pub, nil
}
