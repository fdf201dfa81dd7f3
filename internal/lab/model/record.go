package model

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/minted"
	"github.com/gatehouse-dev/gatehouse/internal/termsafe"
)

// Record is one request to the scripted model, as the transcript keeps it
// (traces/model-transcript.jsonl). It holds canaries as they arrived: print
// it with Redacted.
type Record struct {
	Time    time.Time `json:"time"`
	Session string    `json:"session"` // from the key; "" for an unknown key
	// API is the wire format: anthropic, anthropic-count-tokens,
	// openai-responses, openai-chat, models, preconnect, or "" for a path
	// the model does not serve.
	API        string   `json:"api"`
	Method     string   `json:"method"`
	Path       string   `json:"path"`
	Status     int      `json:"status"`
	Stream     bool     `json:"stream,omitempty"`
	Step       int      `json:"step"`              // tool results in the request
	Tools      []string `json:"tools,omitempty"`   // names of the tools offered
	Call       *Call    `json:"call,omitempty"`    // the tool call sent, if any
	Directives int      `json:"directives"`        // commands found in the step-0 result
	Excerpt    string   `json:"excerpt,omitempty"` // the last tool result, capped at 1 KiB
	// ResultError: the agent marked the last tool result an error
	// (Anthropic is_error), e.g. a command that exited non-zero.
	ResultError bool `json:"result_error,omitempty"`
	Final       bool `json:"final,omitempty"` // the script's final answer
	// Why says why the answer was text: no-tools (a side call), no-document,
	// no-directive, done, step-cap, tool-unavailable.
	Why   string `json:"why,omitempty"`
	Text  string `json:"text,omitempty"` // the text answer
	Error string `json:"error,omitempty"`
}

// Call is a tool call the model sent.
type Call struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Action    string          `json:"action"`  // read or shell
	Command   string          `json:"command"` // the command run, or the path read
	Escalated bool            `json:"escalated,omitempty"`
}

// Redacted is the record made safe to print: canaries and every other
// value the harness made become <kind>, and characters that could act on a
// terminal visible escapes (see evidence.Redact).
func (r Record) Redacted() Record {
	r.Path = evidence.Redact(r.Path) // the agent's request
	r.Excerpt = evidence.Redact(r.Excerpt)
	r.Text = evidence.Redact(r.Text)
	r.Error = evidence.Redact(r.Error)
	if r.Tools != nil { // the agent names its tools
		tools := make([]string, len(r.Tools))
		for i, t := range r.Tools {
			tools[i] = evidence.Redact(t)
		}
		r.Tools = tools
	}
	if r.Call != nil {
		c := *r.Call
		c.Command = evidence.Redact(c.Command)
		c.Arguments = redactJSON(c.Arguments)
		r.Call = &c
	}
	return r
}

// redactJSON redacts a JSON value and keeps it JSON: compacted, nothing
// but its strings can hold a character to escape, and there an escape
// (\u202e) is JSON meaning the same. What is not JSON becomes a string.
func redactJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(minted.Redact(string(raw)))); err != nil || !utf8.Valid(b.Bytes()) {
		q, _ := json.Marshal(evidence.Redact(string(raw)))
		return q
	}
	return json.RawMessage(termsafe.Escape(b.String()))
}
