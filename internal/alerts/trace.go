package alerts

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/detect"
)

// DefaultTraceMax caps traces/alerts.jsonl.
const DefaultTraceMax = 16 << 20

// traceLine is one line of traces/alerts.jsonl: the Event with its raw
// bytes as text when they are UTF-8 (every JSON alert, every audit line),
// else base64 in raw_base64.
type traceLine struct {
	Source    string            `json:"source"`
	Rule      string            `json:"rule"`
	Kind      string            `json:"kind"`
	Object    string            `json:"object"`
	Key       detect.SessionKey `json:"key"`
	EventTime *time.Time        `json:"event_time,omitempty"`
	Received  *time.Time        `json:"received,omitempty"`
	Imported  bool              `json:"imported,omitempty"`
	Raw       string            `json:"raw,omitempty"`
	RawBase64 []byte            `json:"raw_base64,omitempty"`
}

// truncMarker is the last line of a trace that hit its cap.
type truncMarker struct {
	Truncated bool   `json:"truncated"`
	Max       int64  `json:"max_bytes"`
	Dropped   uint64 `json:"dropped,omitempty"`
	Note      string `json:"note"`
}

// Trace appends Events as JSON lines to a file, up to a cap: the first
// event that would pass it is replaced by a truncation marker, later ones
// are counted, and Close appends the final count.
type Trace struct {
	mu      sync.Mutex
	f       *os.File
	size    int64
	max     int64
	full    bool
	dropped uint64
}

// NewTrace opens (appending, creating directories) path capped at max
// bytes (DefaultTraceMax when max <= 0).
func NewTrace(path string, max int64) (*Trace, error) {
	if max <= 0 {
		max = DefaultTraceMax
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("alerts: trace: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("alerts: trace: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("alerts: trace: %w", err)
	}
	return &Trace{f: f, size: fi.Size(), max: max}, nil
}

// Write appends e; past the cap it only counts.
func (t *Trace) Write(e detect.Event) error {
	l := traceLine{Source: e.Source, Rule: e.Rule, Kind: e.Kind, Object: e.Object, Key: e.Key, Imported: e.Imported}
	if !e.EventTime.IsZero() {
		l.EventTime = &e.EventTime
	}
	if !e.Received.IsZero() {
		r := e.Received.Round(0) // the wall clock: the monotonic reading means nothing in a file
		l.Received = &r
	}
	if utf8.Valid(e.Raw) {
		l.Raw = string(e.Raw)
	} else {
		l.RawBase64 = e.Raw
	}
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("alerts: trace: %w", err)
	}
	b = append(b, '\n')
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return fmt.Errorf("alerts: trace: write after close")
	}
	if t.full || t.size+int64(len(b)) > t.max {
		t.dropped++
		if !t.full {
			t.full = true
			return t.marker(0)
		}
		return nil
	}
	n, err := t.f.Write(b)
	t.size += int64(n)
	if err != nil {
		return fmt.Errorf("alerts: trace: %w", err)
	}
	return nil
}

func (t *Trace) marker(dropped uint64) error {
	m, _ := json.Marshal(truncMarker{Truncated: true, Max: t.max, Dropped: dropped, Note: "trace cap reached: later events were not written"})
	_, err := t.f.Write(append(m, '\n'))
	if err != nil {
		return fmt.Errorf("alerts: trace: %w", err)
	}
	return nil
}

// Dropped counts events not written because of the cap.
func (t *Trace) Dropped() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dropped
}

// Close writes the final count of dropped events, if any, and closes.
func (t *Trace) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return nil
	}
	var err error
	if t.dropped > 0 {
		err = t.marker(t.dropped)
	}
	if cerr := t.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("alerts: trace: %w", cerr)
	}
	t.f = nil
	return err
}
