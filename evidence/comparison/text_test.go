package comparison

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/termsafe"
)

// The text matrix (the terminal and compare-<id>.txt) names attempt labels
// a sandbox chose (X-Gatehouse-Attempt), the runtime it reported and
// errors: each stays in its cell, escaped, with the harness's values
// redacted.
func TestWriteTextIsInert(t *testing.T) {
	const hostile = "\x1b]0;owned\x07report\u202etxt.exe\r\u009b2J\nfake-gate  normal  PASS\xff"
	hit := evidence.Hit{Endpoint: "callback", Proto: "http", Dst: "203.0.113.10:80", Attempt: "ghc0123456789abcdef " + hostile}
	c := &Comparison{ID: "c1", Profiles: []Column{
		{Profile: "p" + hostile, Runtime: hostile, Target: hostile, Error: hostile, Results: []evidence.Result{
			{Gate: "g", Path: "normal", Verdict: evidence.Fail, Hits: []evidence.Hit{hit}},
		}},
	}}
	c.Build()
	var out bytes.Buffer
	c.WriteText(&out)
	s := out.String()
	if !utf8.ValidString(s) {
		t.Errorf("not UTF-8: %q", s)
	}
	for _, r := range s {
		if r != '\n' && termsafe.Hidden(r) {
			t.Fatalf("%U reached the text:\n%q", r, s)
		}
	}
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "fake-gate") {
			t.Errorf("a sandbox forged a row %q", l)
		}
	}
	if strings.Contains(s, "ghc0123456789abcdef") || !strings.Contains(s, "<canary>") {
		t.Errorf("the canary in an attempt label was printed:\n%s", s)
	}
}
