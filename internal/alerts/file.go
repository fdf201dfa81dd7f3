package alerts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/detect"
)

// Defaults of a file source.
const (
	DefaultPoll  = 10 * time.Millisecond // how often a tail looks for new lines: its latency resolution
	MaxLineBytes = 1 << 20               // longer lines are discarded (counted malformed)
	auditQuiet   = 50 * time.Millisecond // a pending audit group without EOE is complete after this quiet
)

// File is a detect.Source reading alerts from a file: following it from
// its current end (Tail), or reading it whole once (Import).
type File struct {
	format, path string
	parse        Parser
	imported     bool
	// Poll is the tail's polling interval (DefaultPoll when zero); set it
	// before Start. Detection latency through a tail is only known to this
	// resolution.
	Poll time.Duration

	q      *queue
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	err    error
}

var _ detect.Source = (*File)(nil)

// Tail returns a source following path from its end when Start is called:
// lines already there are not alerts of this run. It survives rotation
// (a new file at path is read from its start) and truncation.
func Tail(format, path string) (*File, error) { return newFile(format, path, false) }

// Import returns a source reading the whole of path once, after the fact.
// Its Events have Imported set and Received zero: detection yes/no,
// latency not measured (detect.Match checks the window on EventTime).
func Import(format, path string) (*File, error) { return newFile(format, path, true) }

func newFile(format, path string, imported bool) (*File, error) {
	p, err := ParserFor(format)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("alerts: %s: %w", format, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("alerts: %s: %s is not a regular file", format, path)
	}
	return &File{format: format, path: path, parse: p, imported: imported, q: newQueue(0), done: make(chan struct{})}, nil
}

func (f *File) Name() string                { return f.format + ":" + f.path }
func (f *File) Events() <-chan detect.Event { return f.q.ch }

// Dropped counts events lost to a full queue.
func (f *File) Dropped() uint64 { return f.q.dropped.Load() }

// Malformed counts lines or groups that did not parse (kept as RuleUnparsed events when room allows).
func (f *File) Malformed() uint64 { return f.q.malformed.Load() }

// Err is why reading stopped early, if it did (after Events is closed).
func (f *File) Err() error { return f.err }

// Start opens the file (at its end for a tail) and reads in the
// background until ctx ends or Close; Events is closed then.
func (f *File) Start(ctx context.Context) error {
	fh, err := os.Open(f.path)
	if err != nil {
		return fmt.Errorf("alerts: %s: %w", f.format, err)
	}
	if !f.imported {
		if _, err := fh.Seek(0, io.SeekEnd); err != nil {
			fh.Close()
			return fmt.Errorf("alerts: %s: %w", f.format, err)
		}
	}
	ctx, f.cancel = context.WithCancel(ctx)
	go func() {
		defer close(f.done)
		defer close(f.q.ch)
		if f.imported {
			f.err = f.readAll(ctx, fh)
			return
		}
		f.err = f.follow(ctx, fh)
	}()
	return nil
}

// Close stops reading and waits for the reader; safe to call twice.
func (f *File) Close() error {
	f.once.Do(func() {
		if f.cancel != nil {
			f.cancel()
			<-f.done
		}
	})
	return nil
}

// lineReader splits a stream into lines, bounded by MaxLineBytes.
type lineReader struct {
	buf  []byte
	skip bool // discarding the rest of an over-long line
}

// feed appends b and calls fn for each complete line (without newline);
// it returns how many over-long lines were discarded.
func (lr *lineReader) feed(b []byte, fn func([]byte)) (long int) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if !lr.skip {
				lr.buf = append(lr.buf, b...)
				if len(lr.buf) > MaxLineBytes {
					lr.buf, lr.skip = lr.buf[:0], true
					long++
				}
			}
			return long
		}
		if !lr.skip {
			lr.buf = append(lr.buf, b[:i]...)
			if len(lr.buf) > MaxLineBytes {
				long++
			} else {
				fn(bytes.Clone(bytes.TrimRight(lr.buf, "\r")))
			}
		}
		lr.buf, lr.skip, b = lr.buf[:0], false, b[i+1:]
	}
	return long
}

// unit hands one line to the parser (or, for audit, to the assembler).
type unit struct {
	f        *File
	asm      Assembler
	received func() time.Time
	emit     func(detect.Event) bool
}

func (u *unit) line(l []byte) bool {
	if len(bytes.TrimSpace(l)) == 0 {
		return true
	}
	if u.f.format == FormatAudit {
		g, err := u.asm.Add(l)
		if err != nil {
			return u.bad(l)
		}
		return u.group(g)
	}
	return u.parsed(l)
}

func (u *unit) group(g []byte) bool {
	if g == nil {
		return true
	}
	return u.parsed(g)
}

func (u *unit) parsed(raw []byte) bool {
	es, err := u.f.parse(raw, u.received())
	if err != nil {
		return u.bad(raw)
	}
	for _, e := range es {
		e.Imported = u.f.imported
		if !u.emit(e) {
			return false
		}
	}
	return true
}

func (u *unit) bad(raw []byte) bool {
	u.f.q.malformed.Add(1)
	return u.emit(unparsed(u.f.format, raw, u.received(), u.f.imported))
}

// readAll imports the whole file; nothing is dropped (it waits for the reader).
func (f *File) readAll(ctx context.Context, fh *os.File) error {
	defer fh.Close()
	u := &unit{f: f, received: func() time.Time { return time.Time{} }}
	u.emit = func(e detect.Event) bool {
		select {
		case f.q.ch <- e:
			return true
		case <-ctx.Done():
			return false
		}
	}
	var lr lineReader
	buf := make([]byte, 64<<10)
	for {
		n, err := fh.Read(buf)
		ok := true
		long := lr.feed(buf[:n], func(l []byte) { ok = ok && u.line(l) })
		f.q.malformed.Add(uint64(long))
		if !ok {
			return ctx.Err()
		}
		if errors.Is(err, io.EOF) {
			if len(lr.buf) > 0 && !lr.skip { // a last line without newline
				if !u.line(bytes.Clone(lr.buf)) {
					return ctx.Err()
				}
			}
			u.group(u.asm.Flush())
			return nil
		}
		if err != nil {
			return fmt.Errorf("alerts: %s: %w", f.format, err)
		}
	}
}

// follow reads what is appended, polling; new lines are stamped Received
// when read. A rotated file is drained, then the new one read from its start.
func (f *File) follow(ctx context.Context, fh *os.File) error {
	defer func() { fh.Close() }()
	poll := f.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	u := &unit{f: f, received: time.Now, emit: func(e detect.Event) bool { f.q.put(e); return true }}
	var lr lineReader
	buf := make([]byte, 64<<10)
	lastData := time.Now()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		got := false
		for { // drain what is there
			n, err := fh.Read(buf)
			if n > 0 {
				got = true
				f.q.malformed.Add(uint64(lr.feed(buf[:n], func(l []byte) { u.line(l) })))
			}
			if err != nil || n == 0 {
				break
			}
		}
		if got {
			lastData = time.Now()
		} else if u.asm.Pending() && time.Since(lastData) >= auditQuiet {
			u.group(u.asm.Flush())
		}
		if next, err := reopened(fh, f.path); err == nil && next != nil {
			fh.Close()
			fh, lr = next, lineReader{}
			continue
		}
		select {
		case <-ctx.Done():
			u.group(u.asm.Flush())
			return nil
		case <-tick.C:
		}
	}
}

// reopened returns a fresh handle when path is now another file (rotation)
// or the open file was truncated below the read offset (then the same file
// from its start). nil, nil: carry on.
func reopened(fh *os.File, path string) (*os.File, error) {
	cur, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	now, err := os.Stat(path)
	if err != nil {
		return nil, nil // rotated away, not yet recreated: keep the old one
	}
	if !os.SameFile(cur, now) {
		return os.Open(path)
	}
	off, err := fh.Seek(0, io.SeekCurrent)
	if err == nil && now.Size() < off {
		_, err = fh.Seek(0, io.SeekStart)
	}
	return nil, err
}
