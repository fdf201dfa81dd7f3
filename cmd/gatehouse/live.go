package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/termsafe"
)

// A run on a terminal keeps one live status line under its progress:
// scenarios finished so far, their verdicts and the time spent, redrawn
// every second and after each line. In CI (stdout not a terminal) the
// progress is the plain lines only, as before.

// isTerminal says whether w is a character device (a terminal) and the
// terminal can redraw a line (TERM is not dumb).
func isTerminal(w io.Writer) bool {
	f, ok := termsafe.Raw(w).(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// resultLineRE is a finished scenario's progress line (steps.ProgressLine).
var resultLineRE = regexp.MustCompile(`(?m)^  \[\s*\d+\] \S+\s+\S+\s+(PASS|FAIL|INCONCLUSIVE)\s`)

// liveLine passes progress through to a terminal and keeps the status line
// below it. Safe for the concurrent writes of scenarios run at once.
// Progress goes out through a termsafe.Writer (it quotes what sandboxes
// sent); only the line's own redraw codes are written raw.
type liveLine struct {
	mu      sync.Mutex
	w       io.Writer // progress, escaped
	raw     io.Writer // the terminal, for clearLine and the status line
	now     func() time.Time
	start   time.Time
	partial bool   // the last write did not end a line: no status under it yet
	pending []byte // that unfinished line, counted once it ends
	counts  map[string]int
	done    int
	closed  bool
	stop    chan struct{}
	stopped sync.WaitGroup
}

const clearLine = "\r\x1b[K"

func newLiveLine(w io.Writer, now func() time.Time) *liveLine {
	safe, ok := w.(*termsafe.Writer)
	if !ok {
		safe = screen(w)
	}
	return &liveLine{w: safe, raw: safe.Unwrap(), now: now, start: now(), counts: map[string]int{}}
}

// tick redraws the status every interval until Close.
func (l *liveLine) tick(every time.Duration) {
	l.stop = make(chan struct{})
	l.stopped.Add(1)
	go func() {
		defer l.stopped.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
				l.mu.Lock()
				if !l.partial && !l.closed {
					l.draw()
				}
				l.mu.Unlock()
			}
		}
	}()
}

func (l *liveLine) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return l.w.Write(p)
	}
	if !l.partial {
		fmt.Fprint(l.raw, clearLine)
	}
	n, err := l.w.Write(p)
	l.pending = append(l.pending, p...)
	if i := bytes.LastIndexByte(l.pending, '\n'); i >= 0 {
		for _, m := range resultLineRE.FindAllSubmatch(l.pending[:i+1], -1) {
			l.done++
			l.counts[string(m[1])]++
		}
		l.pending = append(l.pending[:0], l.pending[i+1:]...)
	}
	l.partial = len(p) > 0 && !bytes.HasSuffix(p, []byte("\n"))
	if !l.partial {
		l.draw()
	}
	return n, err
}

// draw writes the status line, without a newline, so the next write
// replaces it.
func (l *liveLine) draw() {
	fmt.Fprintf(l.raw, "%s… %d scenario(s) done: %d PASS, %d FAIL, %d INCONCLUSIVE  %s", clearLine,
		l.done, l.counts["PASS"], l.counts["FAIL"], l.counts["INCONCLUSIVE"], l.now().Sub(l.start).Round(time.Second))
}

// Close stops the redraws and removes the status line: the summary
// follows on a clean line.
func (l *liveLine) Close() {
	if l.stop != nil {
		close(l.stop)
		l.stopped.Wait()
		l.stop = nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.partial && !l.closed {
		fmt.Fprint(l.raw, clearLine)
	}
	l.closed = true
}
