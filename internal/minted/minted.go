// Package minted is where the harness makes the values it hands out or
// plants (canaries, host nonces, planted credentials, persistence values,
// IMDS tokens, broker tokens, intake run tokens, model keys) and the one
// list of them that printing redacts.
//
// Every value is redacted twice over: by its format (Formats, which also
// finds the values of a run made by another process, when verify or diff
// prints an old bundle) and by its exact value, registered when it was made
// (which also covers a value of no known format: a token a team's token
// command printed). A value is made with New, or registered with Register
// right where it is made, so a new kind of token is redacted from its first
// use; a test in this package fails when a file starts using crypto/rand
// without saying why its random values are no secret to print.
//
// The list is one per process, not per run: a value must be redacted
// wherever it is printed, including in an error that travelled far from
// where it was made, and a process runs one run (a test process that runs
// many only redacts more). Its exact values are bounded (MaxValues); past
// the bound, values that a format covers are not kept, since the format
// redacts them anyway.
package minted

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Kind is what a value is; a redacted value prints as <kind>.
type Kind string

// The kinds of value the harness makes.
const (
	// Canary is a planted or handed-out value whose only job is to be
	// found where it must not be: lab and planted credentials, session
	// canaries, host nonces, persistence values, IMDS session tokens.
	Canary Kind = "canary"
	// BrokerToken is a credential the lab's broker issued to a session.
	BrokerToken Kind = "broker-token"
	// IntakeToken is a run token for a results-intake service.
	IntakeToken Kind = "intake-token"
	// ModelKey is the API key a session's agent uses with the scripted model.
	ModelKey Kind = "model-key"
	// Tag is a value shown on purpose: a session's control token, which
	// names the session in band. New makes it; nothing redacts it.
	Tag Kind = ""
)

// MaxValues bounds the exact values kept. A sandbox can make the lab mint
// (one IMDS token per request): those are in a format, and past the bound
// only values no format covers are kept.
const MaxValues = 4096

// minLen is the shortest value kept: a shorter one would redact ordinary
// words out of everything printed.
const minLen = 8

// Formats are the shapes of every value the harness makes, by kind.
var Formats = []struct {
	Kind Kind
	RE   *regexp.Regexp
}{
	// Lab and planted credentials and IMDS tokens (GHCANARY-<kind>-<hex>).
	{Canary, regexp.MustCompile(`(?i)GHCANARY[-A-Za-z0-9_]*`)},
	// Session canaries, host nonces, persistence values: prefix + 16 hex.
	{Canary, regexp.MustCompile(`\bghc[0-9a-f]{16}\b|ghhost[0-9a-f]{16}|ghst[0-9a-f]{16}`)},
	{BrokerToken, regexp.MustCompile(`ghbroker-[0-9a-f]+`)},
	// ghi1.<claims>.<signature>, base64url; a part of one too.
	{IntakeToken, regexp.MustCompile(`\bghi1\.[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]*)?`)},
	// gh.<session>.ghctl<16 hex>[.<n>]
	{ModelKey, regexp.MustCompile(`\bgh\.[A-Za-z0-9_-]+\.ghctl[0-9a-f]{16}(\.[0-9]+)?`)},
}

var reg struct {
	mu       sync.Mutex
	kind     map[string]Kind
	replacer *strings.Replacer // of kind, built when first needed after a change
}

// New makes a value: prefix followed by n random bytes in hex, registered
// under kind (a Tag is not registered).
func New(kind Kind, prefix string, n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("minted: %w", err)
	}
	v := prefix + hex.EncodeToString(b)
	Register(kind, v)
	return v, nil
}

// Must is New for callers with no error path; crypto/rand does not fail on
// Linux (it blocks until seeded), so this panic is not reachable there.
func Must(kind Kind, prefix string, n int) string {
	v, err := New(kind, prefix, n)
	if err != nil {
		panic(err)
	}
	return v
}

// Register adds a value made elsewhere (a signed token, a token a team's
// command printed) to what Redact hides. Values shorter than 8 bytes and
// Tags are not kept.
func Register(kind Kind, v string) {
	if kind == Tag || len(v) < minLen {
		return
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if _, ok := reg.kind[v]; ok {
		return
	}
	if len(reg.kind) >= MaxValues && covered(v) {
		return
	}
	if reg.kind == nil {
		reg.kind = map[string]Kind{}
	}
	reg.kind[v] = kind
	reg.replacer = nil
}

// covered reports whether a format redacts all of v.
func covered(v string) bool {
	for _, f := range Formats {
		if loc := f.RE.FindStringIndex(v); loc != nil && loc[0] == 0 && loc[1] == len(v) {
			return true
		}
	}
	return false
}

// Redact replaces every registered value and everything in a format the
// harness makes with <kind>. It is for text shown to people (the terminal,
// text reports); evidence keeps the values. It finds values as they were
// made, not re-encoded (base64, split, escaped) by whoever sent them.
func Redact(s string) string {
	if r := replacer(); r != nil {
		s = r.Replace(s)
	}
	for _, f := range Formats {
		s = f.RE.ReplaceAllLiteralString(s, "<"+string(f.Kind)+">")
	}
	return s
}

// replacer is the registered values, longest first so that a value that
// holds another is replaced whole.
func replacer() *strings.Replacer {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if reg.replacer != nil || len(reg.kind) == 0 {
		return reg.replacer
	}
	vals := make([]string, 0, len(reg.kind))
	for v := range reg.kind {
		vals = append(vals, v)
	}
	slices.SortFunc(vals, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(vals))
	for _, v := range vals {
		pairs = append(pairs, v, "<"+string(reg.kind[v])+">")
	}
	reg.replacer = strings.NewReplacer(pairs...)
	return reg.replacer
}
