package evidence_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

func TestRedact(t *testing.T) {
	for _, secret := range []string{
		"GHCANARY-aws-0123456789abcdef", "GHCANARY-imdsv2-ffee", "ghc0123456789abcdef", "ghhost0123456789abcdef",
	} {
		got := evidence.Redact("before " + secret + " after\x1b[31m\n")
		if strings.Contains(got, secret[len(secret)-6:]) {
			t.Errorf("%s survived: %q", secret, got)
		}
		if strings.ContainsAny(got, "\x1b\n") {
			t.Errorf("control characters survived: %q", got)
		}
	}
	if got := evidence.Redact("control ghctl0123456789abcdef"); !strings.Contains(got, "ghctl0123456789abcdef") {
		t.Errorf("a control token was redacted: %q", got)
	}
}
