package termsafe

import (
	"io"
	"sync"
	"unicode/utf8"
)

// Writer is the last line of defence in front of a terminal: everything
// written through it is shown as Lines shows it (newlines and tabs kept,
// everything else hidden escaped), after an optional redaction. A printer
// that forgot to escape a value still cannot act on the terminal through
// it. It keeps no more than an unfinished UTF-8 sequence (3 bytes) between
// writes, so a character split across two writes is not mangled; Flush
// writes that out at the end.
//
// Escaping the raw characters a JSON encoder leaves in strings (DEL, C1,
// format characters) gives valid JSON that decodes to the same values, so
// a JSON document may go through a Writer too.
//
// A Writer is safe for concurrent use.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	redact  func(string) string
	pending []byte // an unfinished UTF-8 sequence held back from the last write
}

// NewWriter returns a Writer writing to w. redact, when not nil, is applied
// to the text of each write before escaping (a value split across two
// writes is not seen whole: printers write a line at a time).
func NewWriter(w io.Writer, redact func(string) string) *Writer {
	return &Writer{w: w, redact: redact}
}

// Write escapes p and writes it; it reports len(p) when the escaped text
// was written whole.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	buf := append(w.pending, p...)
	keep := unfinished(buf)
	w.pending = append([]byte(nil), buf[len(buf)-keep:]...)
	buf = buf[:len(buf)-keep]
	if len(buf) == 0 {
		return len(p), nil
	}
	s := string(buf)
	if w.redact != nil {
		s = w.redact(s)
	}
	if _, err := io.WriteString(w.w, Lines(s)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes out what an unfinished UTF-8 sequence held back, escaped
// as the invalid bytes it is.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) == 0 {
		return nil
	}
	s := Escape(string(w.pending))
	w.pending = nil
	_, err := io.WriteString(w.w, s)
	return err
}

// Unwrap is the writer under w, for a printer that must write its own
// control sequences (a status line's redraw) or a value it means to show
// whole (a token the user asked for). Everything else goes through w.
func (w *Writer) Unwrap() io.Writer { return w.w }

// unfinished is how many bytes at the end of b start a UTF-8 sequence
// that the next write may complete (0 to 3).
func unfinished(b []byte) int {
	for k := 1; k <= utf8.UTFMax-1 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(b[len(b)-k:]) {
				return 0
			}
			return k
		}
	}
	return 0
}

// Raw is the writer under w when w is a Writer, else w itself.
func Raw(w io.Writer) io.Writer {
	if t, ok := w.(*Writer); ok {
		return t.w
	}
	return w
}
