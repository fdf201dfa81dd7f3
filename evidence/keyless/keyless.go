// Package keyless signs evidence bundles with a short-lived Fulcio
// certificate for the CI job's OIDC identity, logged in Rekor, and verifies
// such bundles offline against a trusted root with a certificate identity
// policy. It is the keyless counterpart of evidence/keys: *Signer and
// *Verifier satisfy bundle.Signer and bundle.Verifier.
//
// Only the offline parts are tested here (with sigstore-go's in-process
// virtual Sigstore, see keylesstest); the HTTP clients for the public-good
// Fulcio and Rekor are sigstore-go's own and are never exercised in tests.
package keyless

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Public-good Sigstore instances: the defaults behind --fulcio-url and
// --rekor-url.
const (
	DefaultFulcioURL = "https://fulcio.sigstore.dev"
	DefaultRekorURL  = "https://rekor.sigstore.dev"
)

// TokenEnv is where CI puts the OIDC identity token (audience "sigstore"),
// as cosign and the sigstore clients read it. We never run an interactive
// OIDC flow: the harness runs unattended.
const TokenEnv = "SIGSTORE_ID_TOKEN"

// ErrNoToken means neither the token file nor SIGSTORE_ID_TOKEN gave a token.
var ErrNoToken = errors.New("keyless: no OIDC identity token: set " + TokenEnv + " or pass --oidc-token-file")

// TokenSource returns a fresh OIDC identity token. It is called when the
// certificate is requested (at seal time, after the run), not when the run
// starts, so a CI step may refresh the file during a long run.
type TokenSource func() (string, error)

// Token reads the token from file when file is not empty, else from
// SIGSTORE_ID_TOKEN. A token is a JWT: three dot-separated parts.
func Token(file string) TokenSource {
	return func() (string, error) {
		var tok string
		if file != "" {
			b, err := os.ReadFile(file)
			if err != nil {
				return "", fmt.Errorf("keyless: token file: %w", err)
			}
			tok = string(b)
		} else {
			tok = os.Getenv(TokenEnv)
		}
		tok = strings.TrimSpace(tok)
		if tok == "" {
			return "", ErrNoToken
		}
		if strings.Count(tok, ".") != 2 {
			return "", errors.New("keyless: the OIDC identity token is not a JWT (want header.payload.signature)")
		}
		return tok, nil
	}
}
