package intake

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/minted"
)

// TokenPrefix starts every run token; it names the format's version, so a
// later format can be told apart instead of misread.
const TokenPrefix = "ghi1"

// DefaultTTL is how long a run token lives unless the minter is told
// otherwise: one hour, as the mission brief asks.
const DefaultTTL = time.Hour

// maxTokenLen bounds what the parser will look at: a token is a few hundred
// bytes, so anything far larger is garbage, not a token.
const maxTokenLen = 4096

// The scopes a run token may carry, one per operation that needs one.
// Finalising is part of submitting results, so it needs ScopeSubmit.
const (
	ScopeRead   = "read-report"
	ScopeAttach = "attach-evidence"
	ScopeSubmit = "submit-result"
)

// Scopes is what every minted token allows: exactly these three.
var Scopes = []string{ScopeRead, ScopeAttach, ScopeSubmit}

// Token refusals. A request with a token that fails verification is
// answered 401; one whose token is valid but names another run, report or
// tenant, or lacks the scope, is answered 403.
var (
	ErrNoToken   = errors.New("intake: no token presented")
	ErrMalformed = errors.New("intake: token is malformed")
	ErrSignature = errors.New("intake: token signature does not verify")
	ErrExpired   = errors.New("intake: token expired")
	ErrScope     = errors.New("intake: token lacks the scope")
)

// Subject is what a token is bound to: one run, one report, one tenant.
type Subject struct {
	Run    string `json:"run"`
	Report string `json:"report"`
	Tenant string `json:"tenant"`
}

// Claims are a token's signed contents. Exp and Iat are Unix seconds.
type Claims struct {
	Subject
	Scopes []string `json:"scopes"`
	Exp    int64    `json:"exp"`
	Iat    int64    `json:"iat"`
	JTI    string   `json:"jti"`
}

// Allows reports whether the claims carry scope.
func (c Claims) Allows(scope string) bool {
	for _, s := range c.Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

// Minter issues run tokens with one Ed25519 key. It is what a team's token
// service would be; the reference intake verifies with its public half.
type Minter struct {
	key ed25519.PrivateKey
	ttl time.Duration
	now func() time.Time
}

// MinterOptions configure NewMinter. Zero values take defaults.
type MinterOptions struct {
	Key ed25519.PrivateKey // default: a fresh random key
	TTL time.Duration      // default DefaultTTL
	Now func() time.Time   // default time.Now
}

// NewMinter makes a minter.
func NewMinter(o MinterOptions) (*Minter, error) {
	m := &Minter{key: o.Key, ttl: o.TTL, now: o.Now}
	if m.key == nil {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("intake: minter key: %w", err)
		}
		m.key = k
	} else if len(m.key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("intake: minter key: %d bytes, want %d", len(m.key), ed25519.PrivateKeySize)
	}
	if m.ttl <= 0 {
		m.ttl = DefaultTTL
	}
	if m.now == nil {
		m.now = time.Now
	}
	return m, nil
}

// PublicKey is the key a service verifies tokens with.
func (m *Minter) PublicKey() ed25519.PublicKey { return m.key.Public().(ed25519.PublicKey) }

// Seed is the private key's seed (for the token command of the reference
// service, which runs in another process).
func (m *Minter) Seed() []byte { return m.key.Seed() }

// Mint issues a token for s that expires ttl from now (the minter's TTL
// when ttl is 0). A negative ttl gives a token that has already expired,
// which is what a test of expiry needs.
func (m *Minter) Mint(s Subject, ttl time.Duration) (string, error) {
	if s.Run == "" || s.Report == "" || s.Tenant == "" {
		return "", errors.New("intake: mint: run, report and tenant are required")
	}
	if ttl == 0 {
		ttl = m.ttl
	}
	jti := make([]byte, 12)
	if _, err := rand.Read(jti); err != nil {
		return "", fmt.Errorf("intake: mint: %w", err)
	}
	now := m.now()
	c := Claims{Subject: s, Scopes: append([]string(nil), Scopes...), Iat: now.Unix(),
		Exp: now.Add(ttl).Unix(), JTI: hex.EncodeToString(jti)}
	tok, err := sign(m.key, c)
	if err == nil {
		minted.Register(minted.IntakeToken, tok)
	}
	return tok, err
}

func sign(key ed25519.PrivateKey, c Claims) (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("intake: mint: %w", err)
	}
	signed := TokenPrefix + "." + base64.RawURLEncoding.EncodeToString(b)
	sig := ed25519.Sign(key, []byte(signed))
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// Verify checks a token's form and signature against pub and its expiry
// against now. A token is valid while now is before its exp.
func Verify(pub ed25519.PublicKey, token string, now time.Time) (Claims, error) {
	c, err := verifySig(pub, token)
	if err != nil {
		return Claims{}, err
	}
	if !now.Before(time.Unix(c.Exp, 0)) {
		return c, ErrExpired
	}
	return c, nil
}

// verifySig checks everything but expiry.
func verifySig(pub ed25519.PublicKey, token string) (Claims, error) {
	if token == "" {
		return Claims{}, ErrNoToken
	}
	if len(token) > maxTokenLen {
		return Claims{}, ErrMalformed
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] != TokenPrefix {
		return Claims{}, ErrMalformed
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err2 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || len(sig) != ed25519.SignatureSize {
		return Claims{}, ErrMalformed
	}
	if len(pub) != ed25519.PublicKeySize || !ed25519.Verify(pub, []byte(parts[0]+"."+parts[1]), sig) {
		return Claims{}, ErrSignature
	}
	// The signature covers exactly these bytes; strict decoding keeps a
	// signed token from meaning more than it says.
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	var c Claims
	if err := dec.Decode(&c); err != nil || dec.More() {
		return Claims{}, ErrMalformed
	}
	if c.Run == "" || c.Report == "" || c.Tenant == "" || c.Exp == 0 {
		return Claims{}, ErrMalformed
	}
	return c, nil
}

// TokenHash is how a token appears in records: never whole, only the first
// 16 hex digits of its SHA-256, enough to tell tokens apart.
func TokenHash(token string) string {
	if token == "" {
		return ""
	}
	d := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(d[:8])
}
