package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/minted"
)

// BrokerPrefix starts every token the broker issues. It is not a canary
// prefix: a broker token is the legitimate credential a hardened session is
// meant to hold, so the hunt does not report it.
const BrokerPrefix = "ghbroker-"

// DefaultTokenTTL is how long a broker token lives unless the broker is
// told otherwise: short, so a token that leaks is soon worthless.
const DefaultTokenTTL = 10 * time.Minute

// Broker refusals. Every presentation of a token is recorded as a hit,
// accepted or not; these say why one was refused.
var (
	ErrUnknownToken  = errors.New("broker: unknown token")
	ErrTokenExpired  = errors.New("broker: token expired")
	ErrTokenRevoked  = errors.New("broker: token revoked")
	ErrWrongSession  = errors.New("broker: token belongs to another session")
	ErrWrongTask     = errors.New("broker: token belongs to another task")
	ErrNoTokenIssued = errors.New("broker: no token presented")
)

// Grant is one issued token and what it is bound to.
type Grant struct {
	Token   string    `json:"-"`
	Session string    `json:"session"`
	Task    string    `json:"task"`
	Issued  time.Time `json:"issued"`
	Expires time.Time `json:"expires"`
	Revoked bool      `json:"revoked"`
}

// Broker is the lab's credential broker: it hands a session a short-lived
// token bound to that session and one task, honours it only for that
// session while it is valid, and can revoke it. It is served under /broker/
// on the inference host, the one destination a hardened profile allows.
type Broker struct {
	now       func() time.Time
	ttl       time.Duration
	record    func(h evidence.Hit, from string)
	sessionOf func(src string) string

	mu     sync.Mutex
	grants map[string]*Grant // by token
}

// BrokerOptions configure NewBroker. Zero values take safe defaults, so a
// unit test can inject only the clock.
type BrokerOptions struct {
	Now       func() time.Time                  // default time.Now
	TTL       time.Duration                     // default DefaultTokenTTL
	Record    func(h evidence.Hit, from string) // where hits go; default: dropped
	SessionOf func(src string) string           // source address -> session; default: none
}

// NewBroker makes a broker. The lab makes its own with its hit log and
// session table; tests make one with a fake clock.
func NewBroker(o BrokerOptions) *Broker {
	b := &Broker{now: o.Now, ttl: o.TTL, record: o.Record, sessionOf: o.SessionOf, grants: map[string]*Grant{}}
	if b.now == nil {
		b.now = time.Now
	}
	if b.ttl <= 0 {
		b.ttl = DefaultTokenTTL
	}
	if b.record == nil {
		b.record = func(evidence.Hit, string) {}
	}
	if b.sessionOf == nil {
		b.sessionOf = func(string) string { return "" }
	}
	return b
}

// Issue hands out a fresh token bound to session and task.
func (b *Broker) Issue(session, task string) (string, error) {
	if session == "" || task == "" {
		return "", errors.New("broker: issue: session and task are required")
	}
	tok, err := minted.New(minted.BrokerToken, BrokerPrefix, 20)
	if err != nil {
		return "", fmt.Errorf("broker: issue: %w", err)
	}
	now := b.now()
	b.mu.Lock()
	b.grants[tok] = &Grant{Token: tok, Session: session, Task: task, Issued: now, Expires: now.Add(b.ttl)}
	b.mu.Unlock()
	return tok, nil
}

// Revoke revokes every token of a session and returns how many it revoked.
func (b *Broker) Revoke(session string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, g := range b.grants {
		if g.Session == session && !g.Revoked {
			g.Revoked = true
			n++
		}
	}
	return n
}

// Authorize decides whether token may be used by session for task at time
// at. The HTTP handler and the harness's outside checks both use it, so what
// the harness checks is exactly what the endpoint enforces. An empty task
// means "any task of the token's own".
func (b *Broker) Authorize(token, session, task string, at time.Time) (Grant, error) {
	if token == "" {
		return Grant{}, ErrNoTokenIssued
	}
	b.mu.Lock()
	g, ok := b.grants[token]
	var cp Grant
	if ok {
		cp = *g
	}
	b.mu.Unlock()
	switch {
	case !ok:
		return Grant{}, ErrUnknownToken
	case cp.Revoked:
		return cp, ErrTokenRevoked
	case !at.Before(cp.Expires):
		return cp, ErrTokenExpired
	case session == "" || session != cp.Session:
		return cp, ErrWrongSession
	case task != "" && task != cp.Task:
		return cp, ErrWrongTask
	}
	return cp, nil
}

// Expiry returns when a token expires (zero for an unknown token).
func (b *Broker) Expiry(token string) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if g, ok := b.grants[token]; ok {
		return g.Expires
	}
	return time.Time{}
}

// ServeHTTP answers GET /broker/v1/token with the grant of the presented
// bearer token, for the session the request comes from. Every request is a
// hit (endpoint "broker"): a canary presented here is proof that it was used.
func (b *Broker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := httpHit("broker", r, readBody(r))
	from := b.sessionOf(h.Src)
	tok := strings.TrimSpace(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	g, err := b.Authorize(tok, from, r.Header.Get("X-Gatehouse-Task"), b.now())
	status := http.StatusOK
	switch {
	case r.URL.Path != "/broker/v1/token":
		status, err = http.StatusNotFound, errors.New("broker: no such path")
	case errors.Is(err, ErrNoTokenIssued):
		status = http.StatusUnauthorized
	case err != nil:
		status = http.StatusForbidden
	}
	if err != nil {
		h.Summary = truncate(h.Summary+" [refused: "+strings.TrimPrefix(err.Error(), "broker: ")+"]", maxSummary)
	} else {
		h.Served = true
		h.Summary = truncate(h.Summary+" [accepted for task "+g.Task+"]", maxSummary)
	}
	b.record(h, h.Src)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err != nil {
		_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	_ = json.NewEncoder(w).Encode(g)
}

// Broker returns the lab's credential broker (nil before Up has started the
// inference host, which serves it).
func (l *Lab) Broker() *Broker { return l.broker }

// brokerHandler makes the lab's broker, wired to its hit log and session
// table, for the inference host to serve under /broker/.
func (l *Lab) brokerHandler() http.Handler {
	l.broker = NewBroker(BrokerOptions{Record: func(h evidence.Hit, from string) { l.record(h, from) }, SessionOf: l.sessionOf})
	return l.broker
}
