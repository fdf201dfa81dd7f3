package lab

import (
	"encoding/json"
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
	DefaultMaxHits = 100_000
)

// hitLog keeps hits in arrival order, bounded, and optionally appends each
// one as a JSON line to a writer.
type hitLog struct {
	mu      sync.Mutex
	hits    []evidence.Hit
	max     int
	dropped int
	enc     *json.Encoder // nil when no writer was given
	encErr  error         // first write error; later writes are skipped
}

func newHitLog(max int, w io.Writer) *hitLog {
	if max <= 0 {
		max = DefaultMaxHits
	}
	l := &hitLog{max: max}
	if w != nil {
		l.enc = json.NewEncoder(w)
	}
	return l
}

// add caps the hit's text fields and stores it. A hit beyond the in-memory
// cap is still written to the JSONL log, so the file stays complete.
func (l *hitLog) add(h evidence.Hit) {
	h.Summary = truncate(h.Summary, maxSummary)
	h.Data = truncate(h.Data, maxData)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.hits) < l.max {
		l.hits = append(l.hits, h)
	} else {
		l.dropped++
	}
	if l.enc != nil && l.encErr == nil {
		l.encErr = l.enc.Encode(h)
	}
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
