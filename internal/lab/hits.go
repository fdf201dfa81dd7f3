package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

const (
	maxData    = 4 << 10 // bytes of what arrived kept in Hit.Data
	maxSummary = 256     // bytes kept in Hit.Summary
	// DefaultMaxHits bounds the hits kept in memory: a sandbox that floods an
	// endpoint must not exhaust the harness. Drops are counted, not hidden.
	// It is every trace's line limit too: one cap for memory and file.
	DefaultMaxHits = evidence.DefaultTraceLines
)

// hitLog keeps hits in arrival order, bounded, and optionally appends each
// one as a JSON line to a writer. A hit is kept in both or in neither: when
// the writer is a bounded trace (evidence.Trace, a run folder's Writer)
// and refuses a line (evidence.ErrTraceFull), the hit is dropped from
// memory too; when memory is full first, the trace is told (Skip). So the
// file holds exactly the hits the verdicts saw, and the trace's cut in
// run.json counts exactly the hits dropped.
type hitLog struct {
	mu      sync.Mutex
	hits    []evidence.Hit
	max     int
	dropped int
	w       io.Writer // nil when no writer was given
	encErr  error     // first write error; later writes are skipped
}

func newHitLog(max int, w io.Writer) *hitLog {
	if max <= 0 {
		max = DefaultMaxHits
	}
	return &hitLog{max: max, w: w}
}

// add caps the hit's text fields and stores it, or counts it as dropped.
func (l *hitLog) add(h evidence.Hit) {
	h.Summary = truncate(h.Summary, maxSummary)
	h.Data = truncate(h.Data, maxData)
	line, _ := json.Marshal(h) // a Hit always encodes
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if !keepLine(l.w, line, len(l.hits) >= l.max, &l.encErr) {
		l.dropped++
		return
	}
	l.hits = append(l.hits, h)
}

// keepLine decides one record for a producer that keeps records in memory
// and writes them to w: full means memory is full. It reports whether the
// record is kept (memory and file alike). A write error other than the
// trace's limit is kept in *werr (the first only; later lines are not
// written) and does not drop the record: the evidence is then incomplete,
// and the run says so.
func keepLine(w io.Writer, line []byte, full bool, werr *error) bool {
	if full {
		if s, ok := w.(evidence.Skipper); ok {
			s.Skip(len(line))
		}
		return false
	}
	if w == nil || *werr != nil {
		return true
	}
	if _, err := w.Write(line); errors.Is(err, evidence.ErrTraceFull) {
		return false
	} else if err != nil {
		*werr = err
	}
	return true
}

// all returns a copy of the hits kept, optionally only one session's.
func (l *hitLog) all(keep func(evidence.Hit) bool) []evidence.Hit {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]evidence.Hit, 0, len(l.hits))
	for _, h := range l.hits {
		if keep == nil || keep(h) {
			out = append(out, h)
		}
	}
	return out
}

func (l *hitLog) stats() (dropped int, writeErr error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped, l.encErr
}

// printable turns what arrived into text for Hit.Data: valid UTF-8 is kept,
// any other byte is written as \xNN, so binary payloads survive JSON intact.
func printable(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size <= 1 {
			fmt.Fprintf(&sb, "\\x%02x", b[0])
		} else {
			sb.Write(b[:size])
		}
		b = b[size:]
	}
	return sb.String()
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut > n-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
