package evidence

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Folder is a run folder being written. Everything goes into
// "<out>/.<id>.partial" and only Finish renames it to "<out>/<id>", so a run
// that dies never leaves a folder that looks complete.
type Folder struct {
	mu    sync.Mutex
	out   string
	id    string
	dir   string
	files map[string]*traceFile
	cuts  map[string]TraceCut   // of traces already closed
	lims  map[string]TraceLimit // per trace, set before its first line; else DefaultTraceLimit
	err   error                 // the first failed append: the run cannot be complete
	shut  bool                  // files closed: later appends are refused, never reopened
}

// traceFile is an open trace and the bound its lines go through.
type traceFile struct {
	fh *os.File
	t  *Trace
}

var errShut = errors.New("evidence: run folder already closed")

// PartialSuffix marks a run folder that was not finished.
const PartialSuffix = ".partial"

// Create makes the partial folder for run id under out.
func Create(out, id string) (*Folder, error) {
	if id == "" || strings.ContainsAny(id, `/\`) || strings.HasPrefix(id, ".") {
		return nil, fmt.Errorf("evidence: bad run id %q", id)
	}
	if _, err := os.Stat(filepath.Join(out, id)); err == nil {
		return nil, fmt.Errorf("evidence: run folder %s already exists", filepath.Join(out, id))
	}
	dir := filepath.Join(out, "."+id+PartialSuffix)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("evidence: create run folder: %w", err)
	}
	return &Folder{out: out, id: id, dir: dir, files: map[string]*traceFile{}, cuts: map[string]TraceCut{}, lims: map[string]TraceLimit{}}, nil
}

// Dir is where files are being written now.
func (f *Folder) Dir() string { return f.dir }

// Final is where the folder will be once finished.
func (f *Folder) Final() string { return filepath.Join(f.out, f.id) }

func (f *Folder) path(rel string) (string, error) {
	clean := filepath.Clean(rel)
	if filepath.IsAbs(clean) || clean == "." || strings.HasPrefix(clean, "..") {
		return "", fmt.Errorf("evidence: bad file name %q", rel)
	}
	p := filepath.Join(f.dir, clean)
	return p, os.MkdirAll(filepath.Dir(p), 0o755)
}

// WriteFile writes a whole file (through a temporary name, so a reader never
// sees half of it).
func (f *Folder) WriteFile(rel string, data []byte) error {
	p, err := f.path(rel)
	if err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("evidence: write %s: %w", rel, err)
	}
	return os.Rename(tmp, p)
}

// WriteJSON writes v as indented JSON.
func (f *Folder) WriteJSON(rel string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("evidence: encode %s: %w", rel, err)
	}
	return f.WriteFile(rel, append(b, '\n'))
}

// AppendJSONL appends one JSON line to the trace rel, creating it on first
// use. Past the trace's limit the line is counted, not written (see Cuts),
// and AppendJSONL returns nil: a cut trace is recorded, not an error.
func (f *Folder) AppendJSONL(rel string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("evidence: encode %s: %w", rel, err)
	}
	if _, err := f.writeLine(rel, append(b, '\n')); err != nil && !errors.Is(err, ErrTraceFull) {
		return err
	}
	return nil
}

// writeLine writes whole lines to the trace rel through its bound.
func (f *Folder) writeLine(rel string, p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tf, err := f.open(rel)
	if err != nil {
		return 0, err
	}
	n, err := tf.t.Write(p)
	if err != nil && !errors.Is(err, ErrTraceFull) && f.err == nil {
		f.err = fmt.Errorf("evidence: append to %s: %w", rel, err)
	}
	return n, err
}

// open returns the trace rel, opening its file on first use (f.mu held).
func (f *Folder) open(rel string) (*traceFile, error) {
	if f.shut {
		return nil, errShut
	}
	if tf := f.files[rel]; tf != nil {
		return tf, nil
	}
	p, err := f.path(rel)
	if err == nil {
		var fh *os.File
		if fh, err = os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			tf := &traceFile{fh: fh, t: NewTrace(fh, f.lims[rel])}
			f.files[rel] = tf
			return tf, nil
		}
	}
	err = fmt.Errorf("evidence: open %s: %w", rel, err)
	if f.err == nil {
		f.err = err
	}
	return nil, err
}

// LimitTrace sets rel's bound; it must come before rel's first line.
func (f *Folder) LimitTrace(rel string, lim TraceLimit) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lims[rel] = lim
}

// Cuts is what each trace left out past its limit, by name; traces that
// kept every line are not in it. Read it once every writer is done (after
// Close): it goes into run.json as traces_cut.
func (f *Folder) Cuts() map[string]TraceCut {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out map[string]TraceCut
	add := func(rel string, c TraceCut) {
		if c.DroppedLines > 0 {
			if out == nil {
				out = map[string]TraceCut{}
			}
			out[rel] = c
		}
	}
	for rel, c := range f.cuts {
		add(rel, c)
	}
	for rel, tf := range f.files {
		add(rel, tf.t.Cut())
	}
	return out
}

// Err is the first append that failed, if any. A folder with a failed
// append is missing records and must not be finished as complete.
func (f *Folder) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// Writer is an io.Writer that appends whole JSON lines to the trace rel
// (the lab's hit log writes through it as hits arrive). Past the trace's
// limit Write returns ErrTraceFull, so the producer can drop the same line
// from what it keeps; the writer is a Skipper for lines the producer drops
// first.
func (f *Folder) Writer(rel string) io.Writer { return lineWriter{f: f, rel: rel} }

type lineWriter struct {
	f   *Folder
	rel string
}

func (w lineWriter) Write(p []byte) (int, error) { return w.f.writeLine(w.rel, p) }

// Skip counts a line the producer dropped before writing it.
func (w lineWriter) Skip(n int) {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	if tf, err := w.f.open(w.rel); err == nil {
		tf.t.Skip(n)
	}
}

// Touch makes sure rel exists (an empty trace is evidence too).
func (f *Folder) Touch(rel string) error {
	p, err := f.path(rel)
	if err != nil {
		return err
	}
	fh, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return fh.Close()
}

// Close closes every open trace file; later appends are refused. Call it
// before sealing, so nothing can change a file after it was hashed.
func (f *Folder) Close() error { return f.closeFiles() }

func (f *Folder) closeFiles() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for rel, tf := range f.files {
		errs = append(errs, tf.fh.Sync(), tf.fh.Close())
		if c := tf.t.Cut(); c.DroppedLines > 0 {
			f.cuts[rel] = c
		}
	}
	f.files = map[string]*traceFile{}
	f.shut = true
	return errors.Join(errs...)
}

// Finish closes every file and renames the folder to its final name.
func (f *Folder) Finish() (string, error) {
	if err := f.closeFiles(); err != nil {
		return "", fmt.Errorf("evidence: close run files: %w", err)
	}
	if err := os.Rename(f.dir, f.Final()); err != nil {
		return "", fmt.Errorf("evidence: finish run folder: %w", err)
	}
	f.dir = f.Final()
	return f.dir, nil
}

// Abandon closes files and leaves the folder under its partial name, so the
// evidence of a failed run can be read but never mistaken for a complete one.
func (f *Folder) Abandon() string {
	_ = f.closeFiles()
	return f.dir
}
