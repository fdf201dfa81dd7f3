package minted_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/minted"
)

func TestRedactEveryFormat(t *testing.T) {
	for _, tt := range []struct {
		name, value string
		kind        minted.Kind
	}{
		{"lab credential", "GHCANARY-awssecret-00112233445566778899aabbccddeeff00112233", minted.Canary},
		{"IMDS token", "GHCANARY-imdsv2-0011223344556677889900112233445566778899aabbccdd", minted.Canary},
		{"planted credential", "GHCANARY-home-aws-0011223344556677", minted.Canary},
		{"session canary", "ghc0123456789abcdef", minted.Canary},
		{"host nonce", "ghhost0123456789abcdef", minted.Canary},
		{"persistence value", "ghst0123456789abcdef", minted.Canary},
		{"broker token", "ghbroker-00112233445566778899aabbccddeeff00112233", minted.BrokerToken},
		{"intake run token", "ghi1.eyJydW4iOiJyIn0.c2lnbmF0dXJlc2lnbmF0dXJl", minted.IntakeToken},
		{"part of an intake run token", "ghi1.eyJydW4iOiJyIn0", minted.IntakeToken},
		{"model key", "gh.gh-1a2b-s3.ghctl0123456789abcdef", minted.ModelKey},
		{"model key of the nth agent run", "gh.gh-1a2b-s3.ghctl0123456789abcdef.2", minted.ModelKey},
	} {
		t.Run(tt.name+" is redacted by its format", func(t *testing.T) {
			got := minted.Redact("sent " + tt.value + " to the callback")
			if want := "sent <" + string(tt.kind) + "> to the callback"; got != want {
				t.Fatalf("Redact = %q, want %q", got, want)
			}
		})
	}
}

func TestControlTokensAreShown(t *testing.T) {
	s := "POST /v1/messages?control=ghctl0123456789abcdef"
	if got := minted.Redact(s); got != s {
		t.Fatalf("a control token was redacted: %q", got)
	}
	v := minted.Must(minted.Tag, "ghctl", 8)
	if got := minted.Redact("tag " + v); got != "tag "+v {
		t.Fatalf("a minted tag was redacted: %q", got)
	}
}

func TestNewRegistersTheValue(t *testing.T) {
	// A prefix no format knows: only the registry can redact it.
	v := minted.Must(minted.BrokerToken, "newkind-", 12)
	if !strings.HasPrefix(v, "newkind-") || len(v) != len("newkind-")+24 {
		t.Fatalf("New made %q", v)
	}
	if got := minted.Redact("Authorization: Bearer " + v); got != "Authorization: Bearer <broker-token>" {
		t.Fatalf("a minted value of no known format was printed: %q", got)
	}
}

func TestRegisterRedactsAValueOfNoFormat(t *testing.T) {
	// What a team's token command printed: a JWT-like token.
	tok := "eyJhbGciOiJFZERTQSJ9.eyJydW4iOiJ4In0.team-signature-bytes"
	minted.Register(minted.IntakeToken, tok)
	if got := minted.Redact("-> 200 {\"echo\":\"" + tok + "\"}"); strings.Contains(got, "team-signature") || !strings.Contains(got, "<intake-token>") {
		t.Fatalf("a registered token was printed: %q", got)
	}
}

func TestRegisterKeepsTheLongerValueWhole(t *testing.T) {
	short, long := "zz-short-value-1", "zz-short-value-1-and-more"
	minted.Register(minted.Canary, short)
	minted.Register(minted.BrokerToken, long)
	if got := minted.Redact(long + " " + short); got != "<broker-token> <canary>" {
		t.Fatalf("Redact = %q", got)
	}
}

func TestRegisterIgnoresShortValues(t *testing.T) {
	minted.Register(minted.Canary, "abc")
	minted.Register(minted.Canary, "")
	if got := minted.Redact("abc tabcd"); got != "abc tabcd" {
		t.Fatalf("a short value redacted ordinary text: %q", got)
	}
}

// Past MaxValues a flood of values in a known format is not kept (the
// format redacts them), but a value of no format still is.
func TestRegisterIsBounded(t *testing.T) {
	for range minted.MaxValues + 10 {
		minted.Must(minted.Canary, "GHCANARY-imdsv2-", 8)
	}
	late := minted.Must(minted.Canary, "GHCANARY-imdsv2-", 8)
	if got := minted.Redact(late); got != "<canary>" {
		t.Fatalf("a value past the bound was printed: %q", got)
	}
	if n := minted.Len(); n > minted.MaxValues {
		t.Fatalf("%d values kept, bound %d", n, minted.MaxValues)
	}
	odd := "unformatted-" + strings.Repeat("q", 12)
	minted.Register(minted.IntakeToken, odd)
	if got := minted.Redact(odd); got != "<intake-token>" {
		t.Fatalf("a value of no format past the bound was printed: %q", got)
	}
}
