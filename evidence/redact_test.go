package evidence_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/termsafe"
)

func TestRedact(t *testing.T) {
	for _, tt := range []struct{ secret, kind string }{
		{"GHCANARY-aws-0123456789abcdef", "<canary>"},
		{"GHCANARY-imdsv2-ffee", "<canary>"},
		{"ghc0123456789abcdef", "<canary>"},
		{"ghhost0123456789abcdef", "<canary>"},
		{"ghst0123456789abcdef", "<canary>"},
		{"ghbroker-00112233445566778899aabbccddeeff00112233", "<broker-token>"},
		{"ghi1.eyJydW4iOiJyIn0.c2lnbmF0dXJl", "<intake-token>"},
		{"gh.gh-1a2b-s1.ghctl0123456789abcdef.1", "<model-key>"},
	} {
		got := evidence.Redact("before " + tt.secret + " after\x1b[31m\n")
		if strings.Contains(got, tt.secret[len(tt.secret)-6:]) || !strings.Contains(got, tt.kind) {
			t.Errorf("%s survived: %q", tt.secret, got)
		}
		for _, r := range got {
			if termsafe.Hidden(r) {
				t.Errorf("control character %U survived: %q", r, got)
			}
		}
	}
	if got := evidence.Redact("control ghctl0123456789abcdef"); !strings.Contains(got, "ghctl0123456789abcdef") {
		t.Errorf("a control token was redacted: %q", got)
	}
}

func TestRedactShowsHostileCharactersAsEscapes(t *testing.T) {
	got := evidence.Redact("GET /report\u202etxt.exe\r\x1b]0;owned\x07 \u0085\xff")
	if want := `GET /report\u202etxt.exe\r\x1b]0;owned\x07 \u0085\xff`; got != want {
		t.Fatalf("Redact = %q, want %q", got, want)
	}
}
