package steps

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/termsafe"
)

// hostile is what a sandbox can put in a hit summary or a file name: an
// OSC title set, a screen clear, a CR that overwrites the verdict, a bidi
// override that disguises an extension, a C1 CSI, a newline that forges a
// progress line of its own, and bytes that are not UTF-8.
const hostile = "GET /\x1b]0;owned\x07\x1b[2J report\u202etxt.exe\rPASS \u009b31m\n  [99] fake-gate          normal        PASS           0.1s  forged\xff\xfe"

// inertLine fails unless s is one line of valid UTF-8 holding nothing a
// terminal acts on and nothing that reorders or hides text.
func inertLine(t *testing.T, what, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Errorf("%s: not valid UTF-8: %q", what, s)
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 && i != len(s)-1 {
		t.Errorf("%s: a newline inside the line: %q", what, s)
	}
	for _, r := range strings.TrimSuffix(s, "\n") {
		if termsafe.Hidden(r) {
			t.Errorf("%s: %U reached the output: %q", what, r, s)
			return
		}
	}
}

func TestProgressLineEscapesWhatSandboxesSent(t *testing.T) {
	r := evidence.Result{Gate: "external-callback", Path: "normal", Verdict: evidence.Fail,
		Reason: "1 forbidden hit: callback got http: " + hostile}
	line := ProgressLine(3, r)
	inertLine(t, "progress line", line)
	if !strings.Contains(line, `\x1b]0;owned\x07`) || !strings.Contains(line, `report\u202etxt.exe\rPASS`) {
		t.Errorf("the hostile text is not shown as escapes: %q", line)
	}
}

// Every value the steps make and plant is redacted in the progress line;
// the session's control tag is shown.
func TestProgressLineRedactsPlantedValues(t *testing.T) {
	values := map[string]string{
		"session canary":    token("ghc"),
		"host nonce":        token("ghhost"),
		"persistence value": token("ghst"),
		"planted secret":    canary("env-aws-secret"),
	}
	control := "ghctl0123456789abcdef"
	var reason strings.Builder
	reason.WriteString(control)
	for _, v := range values {
		reason.WriteString(" " + v)
	}
	line := ProgressLine(1, evidence.Result{Gate: "secrets", Path: "assume-breach", Verdict: evidence.Fail, Reason: reason.String()})
	for what, v := range values {
		if strings.Contains(line, v) {
			t.Errorf("the %s %s was printed: %q", what, v, line)
		}
	}
	if !strings.Contains(line, "<canary>") || !strings.Contains(line, control) {
		t.Errorf("want <canary> and the control tag in %q", line)
	}
}

// The JUnit and cucumber reports carry a FAIL's reason: redacted and
// escaped there too.
func TestViolationMessageIsInert(t *testing.T) {
	v := token("ghc")
	msg := (&Violation{Reason: "canary " + v + " at callback: " + hostile}).Error()
	inertLine(t, "violation", msg)
	if strings.Contains(msg, v) {
		t.Errorf("the canary reached the report message: %q", msg)
	}
}
