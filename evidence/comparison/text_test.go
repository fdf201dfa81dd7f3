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

// The page escapes markup (html/template) and shows what disguises text
// as escapes.
func TestWriteHTMLShowsDisguisingCharactersAsEscapes(t *testing.T) {
	hit := evidence.Hit{Endpoint: "callback", Proto: "http", Dst: "203.0.113.10:80", Attempt: "report\u202etxt.exe\u200b\u0085"}
	c := &Comparison{ID: "c1", Profiles: []Column{{Profile: "p\u2066", Results: []evidence.Result{
		{Gate: "g", Path: "normal", Verdict: evidence.Fail, Reason: "<script>x</script>\u202e", Hits: []evidence.Hit{hit}},
	}}}}
	c.Build()
	var out bytes.Buffer
	if err := c.WriteHTML(&out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, r := range s {
		if r != '\n' && r != '\t' && termsafe.Hidden(r) {
			t.Fatalf("%U reached the page", r)
		}
	}
	if strings.Contains(s, "<script>x") || !strings.Contains(s, `report\u202etxt.exe`) {
		t.Errorf("markup not escaped, or the disguised label not shown as escapes")
	}
}
