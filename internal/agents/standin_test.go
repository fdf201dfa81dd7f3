package agents_test

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// standin is the smallest model that drives an agent CLI through one tool
// call: the first request that offers tools gets a shell call running
// Command, every later one (a tool result is in it) a final answer. It is
// not the lab's scripted model (internal/lab/model): only enough to prove that each
// CLI runs, calls its tool, and prints what Parse reads. Stateless like the
// real one: the step is the number of tool results in the request.
type standin struct {
	Command string // the shell command the model asks for
	mu      sync.Mutex
	log     []standinRecord
}

type standinRecord struct {
	Method, Path, API string
	Step              int
	Tools             []string
	Call              string // tool call sent, or "" for a text answer
	ToolResult        string // the last tool result the agent sent back
}

func (s *standin) records() []standinRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]standinRecord(nil), s.log...)
}

func (s *standin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := standinRecord{Method: r.Method, Path: r.URL.Path}
	defer func() { s.mu.Lock(); s.log = append(s.log, rec); s.mu.Unlock() }()
	if r.Method == http.MethodHead || (r.Method == http.MethodGet && r.URL.Path == "/") {
		return // Claude's preconnect
	}
	body, err := readBody(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnsupportedMediaType)
		return
	}
	switch r.URL.Path {
	case "/v1/messages":
		rec.API = "anthropic"
		s.anthropic(w, body, &rec)
	case "/v1/responses":
		rec.API = "responses"
		s.responses(w, body, &rec)
	case "/v1/chat/completions":
		rec.API = "chat"
		s.chat(w, body, &rec)
	default:
		http.NotFound(w, r)
	}
}

func readBody(r *http.Request) ([]byte, error) {
	var rd io.Reader = r.Body
	switch r.Header.Get("Content-Encoding") {
	case "":
	case "gzip":
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		rd = gz
	default:
		return nil, fmt.Errorf("stand-in: no %s", r.Header.Get("Content-Encoding"))
	}
	return io.ReadAll(io.LimitReader(rd, 32<<20))
}

// sse writes one server-sent event and flushes it.
func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func sseHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
}

// shellArgs renders Command for the first shell tool offered.
func (s *standin) shellArgs(tools []string) (name string, args map[string]any) {
	for _, t := range tools {
		switch t {
		case "Bash", "run_shell_command", "shell_command":
			return t, map[string]any{"command": s.Command}
		case "exec_command":
			return t, map[string]any{"cmd": s.Command}
		case "shell":
			return t, map[string]any{"command": []string{"bash", "-lc", s.Command}}
		}
	}
	return "", nil
}

// text flattens a tool result: a string, or blocks with text.
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct{ Text string }
	_ = json.Unmarshal(raw, &blocks)
	var b strings.Builder
	for _, x := range blocks {
		b.WriteString(x.Text)
	}
	return b.String()
}

const finalAnswer = "stand-in: done"
