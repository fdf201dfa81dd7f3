package main

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/steps"
)

// On a terminal the progress lines pass through unchanged and one status
// line, counting the verdicts of the real progress lines, is redrawn under
// them; Close removes it.
func TestLiveLineOnATerminal(t *testing.T) {
	var out bytes.Buffer
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLiveLine(&out, func() time.Time { return clock })
	lines := []string{
		"lab gh-1234 up and sealed\n",
		steps.ProgressLine(1, evidence.Result{Gate: "external-callback", Path: "normal", Verdict: evidence.Pass, DurationMS: 1200}),
		steps.ProgressLine(2, evidence.Result{Gate: "external-callback", Path: "assume-breach", Verdict: evidence.Fail, Reason: "hit", DurationMS: 900}),
	}
	for _, s := range lines {
		clock = clock.Add(30 * time.Second)
		if _, err := l.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	// A line written in pieces gets no status line in its middle.
	_, _ = l.Write([]byte("  [ 3] cloud-metadata     normal        "))
	mid := out.String()
	_, _ = l.Write([]byte("INCONCLUSIVE    0.5s  why\n"))
	l.Close()
	l.Close()
	got := out.String()

	if !strings.HasSuffix(mid, "normal        ") {
		t.Errorf("a status line was drawn inside a partial line: %q", mid[len(mid)-60:])
	}
	want := clearLine + "… 2 scenario(s) done: 1 PASS, 1 FAIL, 0 INCONCLUSIVE  1m30s"
	if !strings.Contains(got, want) {
		t.Errorf("no status %q in\n%q", want, got)
	}
	if !strings.Contains(got, "3 scenario(s) done: 1 PASS, 1 FAIL, 1 INCONCLUSIVE") {
		t.Errorf("the pieced line was not counted:\n%q", got)
	}
	// Without the redraws, the text is exactly the progress lines.
	plain := got
	for _, s := range []string{"… 1 scenario(s) done: 1 PASS, 0 FAIL, 0 INCONCLUSIVE  1m0s", want, "… 0 scenario(s) done: 0 PASS, 0 FAIL, 0 INCONCLUSIVE  30s",
		"… 3 scenario(s) done: 1 PASS, 1 FAIL, 1 INCONCLUSIVE  1m30s", clearLine} {
		plain = strings.ReplaceAll(plain, s, "")
	}
	if wantPlain := strings.Join(lines, "") + "  [ 3] cloud-metadata     normal        INCONCLUSIVE    0.5s  why\n"; plain != wantPlain {
		t.Errorf("progress changed on the way through:\n%q\nwant\n%q", plain, wantPlain)
	}
	if !strings.HasSuffix(got, "1 INCONCLUSIVE  1m30s"+clearLine) {
		t.Errorf("Close should clear the status line, once: %q", got[len(got)-40:])
	}
}

// The ticker redraws the elapsed time between lines.
func TestLiveLineTicks(t *testing.T) {
	var out syncBuffer
	l := newLiveLine(&out, time.Now)
	l.tick(10 * time.Millisecond)
	time.Sleep(80 * time.Millisecond)
	l.Close()
	if n := strings.Count(out.String(), "scenario(s) done"); n < 2 {
		t.Errorf("%d redraws in 80ms at 10ms: %q", n, out.String())
	}
}

// Files that are not terminals, and buffers, get the plain lines: CI logs
// stay as they were.
func TestNotATerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	devnull, err := os.Open(os.DevNull) // a character device, but not a terminal by mode alone
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	if isTerminal(f) || isTerminal(&bytes.Buffer{}) {
		t.Error("a regular file or a buffer taken for a terminal")
	}
	t.Setenv("TERM", "dumb")
	if isTerminal(devnull) {
		t.Error("TERM=dumb must give plain lines")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
