package evidence

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// TraceLimit bounds one trace file (a JSONL file under traces/). A sandbox
// that loops small requests to an allowed endpoint must not fill the disk
// or make the bundle too large to verify: past either bound a line is
// counted, never written.
type TraceLimit struct {
	Lines int64 `json:"max_lines"`
	Bytes int64 `json:"max_bytes"`
}

// DefaultTraceLimit is every trace's bound. A full run of every gate writes
// a few thousand lines per trace (docs/bench.md: 5,000 hits); a flood
// reaches 100,000 lines in seconds. The line bound is the lab's in-memory
// hit cap (lab.DefaultMaxHits), so the hit log and its trace keep the same
// hits.
var DefaultTraceLimit = TraceLimit{Lines: DefaultTraceLines, Bytes: DefaultTraceBytes}

// The default limits, as constants for callers that size their own caps
// by them.
const (
	DefaultTraceLines = 100_000
	DefaultTraceBytes = 128 << 20
)

// TraceCut is what a trace left out once it reached its limit. It is
// recorded per trace in run.json (traces_cut), and a verdict that reads the
// trace cannot be PASS (RecheckTraces).
type TraceCut struct {
	TraceLimit
	DroppedLines int64 `json:"dropped_lines"`
	DroppedBytes int64 `json:"dropped_bytes"`
}

// ErrTraceFull is Trace.Write's answer to a line past the limit: the line
// was counted as dropped. A producer that also keeps lines in memory drops
// the same one, so memory and file agree.
var ErrTraceFull = errors.New("evidence: trace full")

// Trace writes whole JSON lines to w up to a limit and counts the rest.
// Each Write must be whole lines (json.Encoder writes one value per call).
type Trace struct {
	mu    sync.Mutex
	w     io.Writer
	lim   TraceLimit
	lines int64
	bytes int64
	cut   TraceCut
}

// NewTrace bounds w by lim; a zero field takes DefaultTraceLimit's.
func NewTrace(w io.Writer, lim TraceLimit) *Trace {
	if lim.Lines <= 0 {
		lim.Lines = DefaultTraceLimit.Lines
	}
	if lim.Bytes <= 0 {
		lim.Bytes = DefaultTraceLimit.Bytes
	}
	return &Trace{w: w, lim: lim, cut: TraceCut{TraceLimit: lim}}
}

// Write writes p if it fits, else counts it and returns ErrTraceFull. Once
// one line did not fit, no later line is written, even a shorter one: the
// trace is a prefix of what happened, never a sample.
func (t *Trace) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cut.DroppedLines > 0 || t.lines+1 > t.lim.Lines || t.bytes+int64(len(p)) > t.lim.Bytes {
		t.skip(len(p))
		return 0, ErrTraceFull
	}
	n, err := t.w.Write(p)
	t.lines++
	t.bytes += int64(n)
	return n, err
}

// Append writes v as one JSON line (ErrTraceFull past the limit).
func (t *Trace) Append(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("evidence: encode trace line: %w", err)
	}
	_, err = t.Write(append(b, '\n'))
	return err
}

// Skip counts a line of n bytes that its producer dropped before writing
// (its own cap was reached first), so the trace's count stays the one
// count of what is missing.
func (t *Trace) Skip(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.skip(n)
}

func (t *Trace) skip(n int) {
	t.cut.DroppedLines++
	t.cut.DroppedBytes += int64(n)
}

// Cut is what the trace left out so far (zero counts when nothing).
func (t *Trace) Cut() TraceCut {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cut
}

// A Skipper is a trace writer that can be told of a line its producer
// dropped (Folder.Writer's writers are).
type Skipper interface{ Skip(n int) }
