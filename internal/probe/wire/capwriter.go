package wire

import "sync"

// CapWriter keeps the first N bytes written to it and counts the rest, so a
// hostile probe cannot fill the harness's memory through its stdout. Write
// never fails: a failing pipe would change how the probe behaves.
type CapWriter struct {
	N int64

	mu      sync.Mutex
	buf     []byte
	dropped int64
}

// NewCapWriter returns a CapWriter that keeps n bytes.
func NewCapWriter(n int64) *CapWriter { return &CapWriter{N: n} }

func (w *CapWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	room := w.N - int64(len(w.buf))
	if room < 0 {
		room = 0
	}
	keep := min(room, int64(len(p)))
	w.buf = append(w.buf, p[:keep]...)
	w.dropped += int64(len(p)) - keep
	return len(p), nil
}

// Bytes returns a copy of the bytes kept.
func (w *CapWriter) Bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]byte(nil), w.buf...)
}

// Truncated reports whether any byte was dropped.
func (w *CapWriter) Truncated() bool { return w.Dropped() > 0 }

// Dropped is the number of bytes written beyond N.
func (w *CapWriter) Dropped() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dropped
}
