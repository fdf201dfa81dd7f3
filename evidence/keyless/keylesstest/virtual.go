// Package keylesstest runs keyless signing against sigstore-go's in-process
// virtual Sigstore (pkg/testing/ca): a throwaway Fulcio CA and Rekor log
// whose keys live in memory. Nothing leaves the process. The pieces plug
// into keyless.Services exactly where sigstore-go's HTTP clients do in
// production, so the code under test is the production Signer and Verifier.
// For tests only.
package keylesstest

import (
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"

	"github.com/gatehouse-dev/gatehouse/evidence/keyless"
)

// Token is the OIDC token the virtual Fulcio demands. It has the shape of a
// JWT and proves nothing: the virtual CA certifies whatever identity the
// test asks for.
const Token = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ0ZXN0In0.dGVzdA"

// Virtual is one virtual Sigstore deployment.
type Virtual struct {
	vs *ca.VirtualSigstore
}

// New makes a virtual Sigstore with fresh CA and log keys.
func New() (*Virtual, error) {
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		return nil, fmt.Errorf("keylesstest: %w", err)
	}
	return &Virtual{vs: vs}, nil
}

// Services returns a key certified for identity and issuer (the SAN is an
// email, as the virtual CA issues them), a Fulcio stand-in that hands out
// that certificate only for that key and Token, and a Rekor stand-in. The
// token source returns Token; replace it to test token plumbing.
func (v *Virtual) Services(identity, issuer string) (keyless.Services, error) {
	cert, priv, err := v.vs.GenerateLeafCert(identity, issuer)
	if err != nil {
		return keyless.Services{}, fmt.Errorf("keylesstest: leaf: %w", err)
	}
	ec, ok := priv.(*ecdsa.PrivateKey)
	if !ok {
		return keyless.Services{}, errors.New("keylesstest: virtual CA made a non-ECDSA key")
	}
	kp, err := newLeafKey(ec)
	if err != nil {
		return keyless.Services{}, err
	}
	return keyless.Services{
		Keypair:      kp,
		Certificates: &fulcio{cert: cert},
		Logs:         []sign.Transparency{&rekor{vs: v.vs}},
		Token:        func() (string, error) { return Token, nil },
	}, nil
}

// TrustedRoot is the trusted root of this deployment: its Fulcio CA and its
// Rekor log, and its CT log when withCT (the virtual CA issues no SCTs, so
// bundles then fail the SCT requirement: a negative test).
func (v *Virtual) TrustedRoot(withCT bool) (*root.TrustedRoot, error) {
	// The virtual log's ID is the hex string's bytes, not the raw key ID the
	// entries carry; a root written with it would never match an entry.
	rawIDs := func(logs map[string]*root.TransparencyLog) (map[string]*root.TransparencyLog, error) {
		out := map[string]*root.TransparencyLog{}
		for id, l := range logs {
			raw, err := hex.DecodeString(id)
			if err != nil {
				return nil, fmt.Errorf("keylesstest: log id: %w", err)
			}
			c := *l
			c.ID = raw
			out[id] = &c
		}
		return out, nil
	}
	rekorLogs, err := rawIDs(v.vs.RekorLogs())
	if err != nil {
		return nil, err
	}
	ct := map[string]*root.TransparencyLog{}
	if withCT {
		if ct, err = rawIDs(v.vs.CTLogs()); err != nil {
			return nil, err
		}
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, v.vs.FulcioCertificateAuthorities(), ct,
		v.vs.TimestampingAuthorities(), rekorLogs)
	if err != nil {
		return nil, fmt.Errorf("keylesstest: trusted root: %w", err)
	}
	return tr, nil
}

// WriteTrustedRoot writes TrustedRoot(withCT) as trusted_root.json to path
// and reads it back, so callers test the file format the CLI reads.
func (v *Virtual) WriteTrustedRoot(path string, withCT bool) (*root.TrustedRoot, error) {
	tr, err := v.TrustedRoot(withCT)
	if err != nil {
		return nil, err
	}
	b, err := tr.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("keylesstest: trusted root: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return nil, fmt.Errorf("keylesstest: %w", err)
	}
	return keyless.LoadTrustedRoot(path)
}

// Leaf returns the certificate a Services' Fulcio stand-in hands out.
func Leaf(svc keyless.Services) (*x509.Certificate, bool) {
	f, ok := svc.Certificates.(*fulcio)
	if !ok {
		return nil, false
	}
	return f.cert, true
}
