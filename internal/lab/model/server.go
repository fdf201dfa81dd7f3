package model

import (
	"net/http"
	"strings"
	"time"
)

const countTokensPath = "/v1/messages/count_tokens"

// Patterns are the http.ServeMux patterns the model answers on the
// inference host; the lab routes each of them to the Server.
var Patterns = []string{
	"/{$}", // a preconnect (Claude Code sends HEAD / first)
	"/v1/messages",
	"/v1/messages/count_tokens",
	"/v1/responses",
	"/v1/chat/completions",
	"/v1/models",
}

// Options configure New. Zero values are safe: no key is known, nothing is
// observed, the clock is time.Now.
type Options struct {
	// Lookup finds the script for an API key (x-api-key, or the bearer
	// token). Unknown keys are answered 401.
	Lookup func(key string) (Script, bool)
	// Observe is called once per request, after the answer is written.
	Observe func(Exchange)
	Now     func() time.Time
}

// Exchange is one request and what the model made of it.
type Exchange struct {
	Request *http.Request
	Body    []byte // the request body, decompressed (nil when unreadable)
	Known   bool   // the key was registered
	Record  Record
}

// Server is the scripted model. It keeps no conversation state.
type Server struct {
	lookup  func(string) (Script, bool)
	observe func(Exchange)
	now     func() time.Time
}

// New makes a scripted model server.
func New(o Options) *Server {
	s := &Server{lookup: o.Lookup, observe: o.Observe, now: o.Now}
	if s.lookup == nil {
		s.lookup = func(string) (Script, bool) { return Script{}, false }
	}
	if s.observe == nil {
		s.observe = func(Exchange) {}
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// ServeHTTP answers one request and reports it to Observe.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ex := Exchange{Request: r, Record: Record{Time: s.now().UTC(), Method: r.Method, Path: r.URL.Path}}
	defer func() { s.observe(ex) }()
	rec := &ex.Record
	switch r.URL.Path {
	case "/":
		rec.API, rec.Status = "preconnect", s.preconnect(w, r)
		return
	case "/v1/models":
		rec.API, rec.Status = "models", serveModels(w, r)
		return
	}
	wf, ok := wires[r.URL.Path]
	if !ok {
		rec.Status, rec.Error = fail(anthropicWire{}, w, errNotFound("no such path: "+r.URL.Path))
		return
	}
	rec.API = wf.name()
	if r.URL.Path == countTokensPath {
		rec.API = "anthropic-count-tokens"
	}
	if r.Method != http.MethodPost {
		rec.Status, rec.Error = fail(wf, w, &apiError{http.StatusMethodNotAllowed, kindInvalid, "use POST"})
		return
	}
	body, aerr := readBody(r)
	ex.Body = body
	if aerr != nil {
		rec.Status, rec.Error = fail(wf, w, aerr)
		return
	}
	script, known := s.lookup(apiKey(r))
	if !known {
		rec.Status, rec.Error = fail(wf, w, &apiError{http.StatusUnauthorized, kindAuth, "invalid API key: not registered with the Gatehouse lab"})
		return
	}
	ex.Known, rec.Session = true, script.Session
	t, err := wf.parse(body)
	if err != nil {
		rec.Status, rec.Error = fail(wf, w, &apiError{http.StatusBadRequest, kindInvalid, "cannot read the request: " + err.Error()})
		return
	}
	rec.Stream, rec.Step, rec.Tools = t.Stream, len(t.Results), names(t.Tools)
	if r.URL.Path == countTokensPath {
		rec.Stream, rec.Status = false, countTokens(w, body)
		return
	}
	rp := decide(script, t)
	a := newAnswer(apiKey(r), rec.API, t, rp, len(body))
	rec.Directives, rec.Excerpt, rec.ResultError = rp.Directives, rp.Excerpt, rp.ResultErr
	rec.Final, rec.Why, rec.Text = rp.Final, rp.Why, rp.Text
	if rp.Tool != "" {
		rec.Call = &Call{ID: a.callID, Name: rp.Tool, Arguments: a.args, Action: rp.Action, Command: rp.Command, Escalated: rp.Escalated}
	}
	rec.Status = http.StatusOK
	if err := wf.answer(w, a); err != nil {
		rec.Error = "writing the answer: " + err.Error()
	}
}

// preconnect answers HEAD / and GET / (a client warming its connection).
func (s *Server) preconnect(w http.ResponseWriter, r *http.Request) int {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return http.StatusMethodNotAllowed
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write([]byte("gatehouse scripted model\n"))
	}
	return http.StatusOK
}

// serveModels lists the one model, in a shape both OpenAI and Anthropic
// clients accept. It needs no key: the list is no secret.
func serveModels(w http.ResponseWriter, r *http.Request) int {
	if r.Method != http.MethodGet {
		st, _ := fail(chatWire{}, w, &apiError{http.StatusMethodNotAllowed, kindInvalid, "use GET"})
		return st
	}
	m := map[string]any{"id": Name, "object": "model", "type": "model", "display_name": "Gatehouse scripted model",
		"created": 0, "created_at": "1970-01-01T00:00:00Z", "owned_by": "gatehouse"}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{m},
		"has_more": false, "first_id": Name, "last_id": Name})
	return http.StatusOK
}

// apiKey is the key a request presents: Anthropic's x-api-key, or an
// OpenAI-style bearer token.
func apiKey(r *http.Request) string {
	if k := strings.TrimSpace(r.Header.Get("X-Api-Key")); k != "" {
		return k
	}
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}
