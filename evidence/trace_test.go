package evidence_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// countLines counts the lines of a file, each of which must be JSON.
func countLines(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var n int64
	for sc.Scan() {
		if !json.Valid(sc.Bytes()) {
			t.Fatalf("line %d is not whole JSON: %.80q", n+1, sc.Text())
		}
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// A sandbox that loops requests to an allowed endpoint writes a line per
// request: the trace file must stop at its limit, count the rest, and the
// folder must say so (run.json traces_cut).
func TestFolderTraceFlood(t *testing.T) {
	const rel = "traces/endpoint-hits.jsonl"
	for _, tc := range []struct {
		name      string
		lim       *evidence.TraceLimit // nil: the default
		lines     int
		data      int // bytes of Data per line
		wantLines int64
	}{
		{"line limit, default", nil, evidence.DefaultTraceLines + 25_000, 0, evidence.DefaultTraceLines},
		{"byte limit", &evidence.TraceLimit{Bytes: 64 << 10}, 500, 1000, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := evidence.Create(t.TempDir(), "run1")
			if err != nil {
				t.Fatal(err)
			}
			lim := evidence.DefaultTraceLimit
			if tc.lim != nil {
				f.LimitTrace(rel, *tc.lim)
				lim = evidence.NewTrace(nil, *tc.lim).Cut().TraceLimit
			}
			h := evidence.Hit{Endpoint: "inference", Summary: "GET /", Data: strings.Repeat("x", tc.data)}
			lineSize := int64(len(mustJSON(t, h)) + 1)
			for range tc.lines {
				if err := f.AppendJSONL(rel, h); err != nil {
					t.Fatalf("AppendJSONL past the limit: %v (a cut is recorded, not an error)", err)
				}
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			want := tc.wantLines
			if want < 0 {
				want = lim.Bytes / lineSize
			}
			path := filepath.Join(f.Dir(), rel)
			if got := countLines(t, path); got != want {
				t.Fatalf("trace has %d lines, want %d (the limit)", got, want)
			}
			st, _ := os.Stat(path)
			if st.Size() > lim.Bytes {
				t.Fatalf("trace is %d bytes, past its limit of %d", st.Size(), lim.Bytes)
			}
			cut, ok := f.Cuts()[rel]
			if !ok || cut.DroppedLines != int64(tc.lines)-want || cut.DroppedBytes != cut.DroppedLines*lineSize || cut.TraceLimit != lim {
				t.Fatalf("Cuts = %+v, want %d lines (%d bytes each) dropped under %+v", f.Cuts(), int64(tc.lines)-want, lineSize, lim)
			}
			if err := f.Err(); err != nil {
				t.Fatalf("a cut made the folder incomplete: %v", err)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFolderWholeTracesAreNotCut(t *testing.T) {
	f, err := evidence.Create(t.TempDir(), "run1")
	if err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		_ = f.AppendJSONL("traces/probe-attempts.jsonl", evidence.Attempt{ID: "a"})
	}
	_ = f.Close()
	if c := f.Cuts(); c != nil {
		t.Fatalf("Cuts = %+v for a trace under its limit", c)
	}
}

// Folder.Writer is what the lab writes hits and the model transcript
// through: it must refuse past the limit (so the producer drops the same
// line from memory) and count lines the producer dropped first.
func TestFolderWriterRefusesAndSkips(t *testing.T) {
	const rel = "traces/model-transcript.jsonl"
	f, err := evidence.Create(t.TempDir(), "run1")
	if err != nil {
		t.Fatal(err)
	}
	f.LimitTrace(rel, evidence.TraceLimit{Lines: 2})
	w := f.Writer(rel)
	for i, want := range []error{nil, nil, evidence.ErrTraceFull, evidence.ErrTraceFull} {
		if _, err := w.Write([]byte("{}\n")); !errors.Is(err, want) {
			t.Fatalf("write %d: %v, want %v", i, err, want)
		}
	}
	s, ok := w.(evidence.Skipper)
	if !ok {
		t.Fatal("the folder's writer is not a Skipper")
	}
	s.Skip(10)
	_ = f.Close()
	if c := f.Cuts()[rel]; c.DroppedLines != 3 || c.DroppedBytes != 3+3+10 {
		t.Fatalf("cut = %+v, want 3 lines, 16 bytes", c)
	}
	if got := countLines(t, filepath.Join(f.Dir(), rel)); got != 2 {
		t.Fatalf("%d lines written, want 2", got)
	}
}

// Once a line did not fit, a shorter later one is not written either: the
// trace is a prefix of what happened, never a sample of it.
func TestTraceIsAPrefix(t *testing.T) {
	var buf bytes.Buffer
	tr := evidence.NewTrace(&buf, evidence.TraceLimit{Bytes: 10})
	for _, l := range []string{"{\"a\":1}\n", "{\"long\":12345}\n", "{}\n"} {
		_, _ = tr.Write([]byte(l))
	}
	if buf.String() != "{\"a\":1}\n" || tr.Cut().DroppedLines != 2 {
		t.Fatalf("trace %q, cut %+v", buf.String(), tr.Cut())
	}
}
