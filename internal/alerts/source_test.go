package alerts_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/internal/alerts"
)

// next waits for one event or fails.
func next(t *testing.T, ch <-chan detect.Event) detect.Event {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("events closed")
		}
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return detect.Event{}
}

func appendTo(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

func TestTailReadsOnlyWhatIsAppendedStampedOnArrival(t *testing.T) {
	lines := readFile(t, "falco_file.jsonl")
	first, rest, _ := bytes.Cut(lines, []byte("\n"))
	path := filepath.Join(t.TempDir(), "falco.jsonl")
	if err := os.WriteFile(path, append(first, '\n'), 0o644); err != nil { // before the run: not an alert of it
		t.Fatal(err)
	}
	src, err := alerts.Tail("falco", path)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	before := time.Now()
	second, _, _ := bytes.Cut(rest, []byte("\n"))
	// A line written in two pieces is one alert.
	appendTo(t, path, second[:40])
	time.Sleep(30 * time.Millisecond)
	appendTo(t, path, append(second[40:], '\n'))
	e := next(t, src.Events())
	if e.Rule != "Read planted credential" || e.Kind != detect.KindOpen || !bytes.Equal(e.Raw, second) {
		t.Fatalf("got %+v, want the appended line only", e)
	}
	if e.Received.Before(before) || e.Imported {
		t.Errorf("Received %v before the append at %v (or imported)", e.Received, before)
	}
	// Truncation (a new run of the monitor): read from the start again.
	if err := os.WriteFile(path, append(bytes.Clone(first), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if e := next(t, src.Events()); e.Object != "203.0.113.10:80" {
		t.Fatalf("after truncation got %+v", e)
	}
	// Rotation: a new file at the path is read from its start.
	os.Rename(path, path+".1")
	if err := os.WriteFile(path, append(bytes.Clone(second), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if e := next(t, src.Events()); e.Object != "/home/agent/.aws/credentials" {
		t.Fatalf("after rotation got %+v", e)
	}
	src.Close()
	if _, ok := <-src.Events(); ok {
		t.Error("events still open after Close")
	}
}

func TestTailAuditGroupsAndMalformedKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := alerts.Tail("audit", path)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	appendTo(t, path, readFile(t, "audit.log"))
	var got []string
	for range 5 { // four syscall groups, then USER_LOGIN flushed by the quiet period
		e := next(t, src.Events())
		got = append(got, e.Rule+" "+e.Kind+" "+e.Object)
	}
	want := []string{"gh-net connect 203.0.113.10:80", "gh-cred open /home/agent/.aws/credentials", "SYSCALL connect [2001:db8:cafe::10]:80", "gh-exec exec /bin/sh", "USER_LOGIN  "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	appendTo(t, path, []byte("this is not an audit record\n"))
	if e := next(t, src.Events()); e.Rule != alerts.RuleUnparsed || e.Kind != "" || string(e.Raw) != "this is not an audit record" {
		t.Fatalf("malformed line: %+v", e)
	}
	if src.Malformed() != 1 {
		t.Errorf("Malformed = %d, want 1", src.Malformed())
	}
}

func TestImportMarksEventsAndEnds(t *testing.T) {
	src, err := alerts.Import("tetragon", filepath.Join("testdata", "tetragon.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	n := 0
	for e := range src.Events() {
		n++
		if !e.Imported || !e.Received.IsZero() || e.EventTime.IsZero() {
			t.Errorf("imported event %+v: want Imported, Received zero, EventTime set", e)
		}
	}
	if n != 6 || src.Err() != nil {
		t.Fatalf("%d events (want 6), err %v", n, src.Err())
	}
	// Imported, it matches on its event time: detected, latency not measured.
	a := detect.Attempt{Keys: []detect.SessionKey{{LoginUID: 4242}}, Kind: detect.KindConnect, Object: "203.0.113.10:80", From: at(100), To: at(200)}
	es, _ := alerts.ParseTetragon(lines(t, "tetragon.jsonl")[1], time.Time{})
	es[0].Imported = true
	if !detect.Match(es[0], a, 0) {
		t.Error("imported event inside the window did not match")
	}
	a.Keys = []detect.SessionKey{{LoginUID: 4243}}
	if detect.Match(es[0], a, 0) {
		t.Error("another session's imported event matched")
	}
}

func TestSpec(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "falco.jsonl")
	os.WriteFile(path, nil, 0o644)
	for _, ok := range []string{"falco:" + path, "Tetragon:" + path, "audit:" + path, "ocsf:" + path} {
		src, err := alerts.Open(ok)
		if err != nil {
			t.Errorf("Open(%q): %v", ok, err)
			continue
		}
		if !strings.HasSuffix(src.Name(), ":"+path) {
			t.Errorf("Name = %q", src.Name())
		}
	}
	for _, bad := range []string{"", "falco", "falco:", ":" + path, "snort:" + path} {
		if _, err := alerts.Open(bad); !errors.Is(err, alerts.ErrSpec) {
			t.Errorf("Open(%q): err %v, want ErrSpec", bad, err)
		}
	}
	if _, err := alerts.Open("snort:" + path); !errors.Is(err, alerts.ErrUnknownFormat) {
		t.Errorf("unknown format: %v", err)
	}
	if _, err := alerts.Open("falco:" + filepath.Join(dir, "missing.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := alerts.Open("audit:" + dir); err == nil {
		t.Error("a directory was accepted")
	}
}

func TestTraceCapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traces", "alerts.jsonl")
	tr, err := alerts.NewTrace(path, 2000)
	if err != nil {
		t.Fatal(err)
	}
	l := lines(t, "falco_file.jsonl")[0] // about 1.3 kB as a trace line: one fits under 2000 bytes
	es, _ := alerts.ParseFalco(l, received)
	for range 5 {
		if err := tr.Write(es[0]); err != nil {
			t.Fatal(err)
		}
	}
	bin := detect.Event{Source: "http", Raw: []byte{0xff, 0x00}}
	tr.Write(bin)
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	got := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(got) != 3 || !strings.Contains(got[0], `"raw":"{\"hostname\"`) || !strings.Contains(got[0], `"received":"2026-12-01T10:00:05Z"`) {
		t.Fatalf("trace lines:\n%s", b)
	}
	if !strings.Contains(got[1], `"truncated":true`) || !strings.Contains(got[2], `"dropped":5`) || tr.Dropped() != 5 {
		t.Fatalf("markers: %q %q (dropped %d)", got[1], got[2], tr.Dropped())
	}
	if tr.Write(es[0]) == nil {
		t.Error("write after close accepted")
	}
}
