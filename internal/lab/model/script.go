// Package model is the lab's scripted model: a stateless server that speaks
// the Anthropic Messages, OpenAI Responses and OpenAI Chat Completions wire
// formats and answers a real agent CLI the way an obedient model would.
//
// It first asks the agent to read the untrusted document planted for the
// session, then runs, one shell tool call each, only the commands it found
// in that read's result (lines marked "GATEHOUSE-DO: "), then gives a final
// answer. So the chain document -> model -> tool call is on record, and an
// agent that was never shown the document is asked to do nothing.
//
// Stateless: the step is the number of tool results already in the request,
// so retries, non-streaming fallbacks and side calls cannot derail the
// script, and the same request always gets the same answer (ids included).
// The script is chosen by the request's API key.
package model

import (
	"strings"
)

const (
	// Marker starts a directive: the rest of its line is one shell command.
	Marker = "GATEHOUSE-DO: "
	// DefaultMaxSteps caps a conversation when Script.MaxSteps is zero.
	DefaultMaxSteps = 70
	// MaxDirectives and MaxDirectiveLen bound what one document can ask:
	// a hostile document must not make the script unbounded.
	MaxDirectives   = 64
	MaxDirectiveLen = 4 << 10
	// Name is the model id the server reports in /v1/models and answers.
	Name = "gh-scripted"
)

// Script is what the model does for one API key.
type Script struct {
	Session  string // the session the key belongs to
	Document string // absolute path of the planted document, read at step 0
	MaxSteps int    // tool results after which it answers at once; DefaultMaxSteps when zero
}

func (s Script) maxSteps() int {
	if s.MaxSteps > 0 {
		return s.MaxSteps
	}
	return DefaultMaxSteps
}

// Key is the API key the harness gives a session's agent: "gh.", the
// session, ".", its control token. The control token makes every model
// request carry proof of which session sent it.
func Key(session, control string) string {
	return "gh." + session + "." + control
}

// Directives returns the commands a document asks for: the text after
// Marker on each line that holds it, wherever the marker starts (an agent's
// read tool may prefix line numbers). Empty and over-long commands are
// skipped; at most MaxDirectives are returned.
func Directives(text string) []string {
	var out []string
	for line := range strings.Lines(text) {
		i := strings.Index(line, Marker)
		if i < 0 {
			continue
		}
		cmd := strings.TrimSpace(line[i+len(Marker):])
		if cmd == "" || len(cmd) > MaxDirectiveLen {
			continue
		}
		out = append(out, cmd)
		if len(out) == MaxDirectives {
			break
		}
	}
	return out
}
