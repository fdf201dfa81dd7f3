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
	files map[string]*os.File
	err   error // the first failed append: the run cannot be complete
	shut  bool  // files closed: later appends are refused, never reopened
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
	return &Folder{out: out, id: id, dir: dir, files: map[string]*os.File{}}, nil
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

// AppendJSONL appends one JSON line to rel, creating it on first use.
func (f *Folder) AppendJSONL(rel string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("evidence: encode %s: %w", rel, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shut {
		return errShut
	}
	fh := f.files[rel]
	if fh == nil {
		p, err := f.path(rel)
		if err != nil {
			return err
		}
		fh, err = os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("evidence: open %s: %w", rel, err)
		}
		f.files[rel] = fh
	}
	if _, err = fh.Write(append(b, '\n')); err != nil && f.err == nil {
		f.err = fmt.Errorf("evidence: append to %s: %w", rel, err)
	}
	return err
}

// Err is the first append that failed, if any. A folder with a failed
// append is missing records and must not be finished as complete.
func (f *Folder) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// Writer is an io.Writer that appends whole JSON lines to rel (the lab's
// hit log writes through it as hits arrive).
func (f *Folder) Writer(rel string) io.Writer { return lineWriter{f: f, rel: rel} }

type lineWriter struct {
	f   *Folder
	rel string
}

func (w lineWriter) Write(p []byte) (int, error) {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	if w.f.shut {
		return 0, errShut
	}
	fh := w.f.files[w.rel]
	if fh == nil {
		path, err := w.f.path(w.rel)
		if err == nil {
			fh, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		}
		if err != nil {
			if w.f.err == nil {
				w.f.err = err
			}
			return 0, err
		}
		w.f.files[w.rel] = fh
	}
	n, err := fh.Write(p)
	if err != nil && w.f.err == nil {
		w.f.err = fmt.Errorf("evidence: append to %s: %w", w.rel, err)
	}
	return n, err
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
	for _, fh := range f.files {
		errs = append(errs, fh.Sync(), fh.Close())
	}
	f.files = map[string]*os.File{}
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
