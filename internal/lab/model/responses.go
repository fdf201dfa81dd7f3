package model

import (
	"encoding/json"
	"net/http"
	"strings"
)

// responsesWire is the OpenAI Responses API (Codex).
type responsesWire struct{}

func (responsesWire) name() string { return "openai-responses" }

func (responsesWire) parse(body []byte) (turn, error) {
	var req struct {
		Model  string          `json:"model"`
		Stream bool            `json:"stream"`
		Input  json.RawMessage `json:"input"` // a string, or items
		Tools  []struct {
			Type       string          `json:"type"`
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return turn{}, err
	}
	t := turn{Model: req.Model, Stream: req.Stream}
	for _, tl := range req.Tools {
		name := tl.Name
		if name == "" {
			name = tl.Type // web_search, local_shell: built-ins have no name
		}
		t.Tools = append(t.Tools, tool{Name: name, Props: schemaProps(tl.Parameters), Callable: tl.Type == "function"})
	}
	var items []struct {
		Type   string          `json:"type"`
		Output json.RawMessage `json:"output"`
	}
	if json.Unmarshal(req.Input, &items) == nil { // a string input holds no tool result
		for _, it := range items {
			// function_call_output, and the same for custom and built-in tools
			if strings.HasSuffix(it.Type, "_call_output") {
				t.Results = append(t.Results, result{Text: textOf(it.Output)})
			}
		}
	}
	return t, nil
}

func (responsesWire) errorBody(kind errKind, msg string) any { return openaiError(kind, msg) }

// openaiError is the error shape both OpenAI APIs use.
func openaiError(kind errKind, msg string) any {
	code := map[errKind]string{kindInvalid: "invalid_request", kindAuth: "invalid_api_key",
		kindNotFound: "not_found", kindTooLarge: "request_too_large", kindMedia: "unsupported_content_encoding"}[kind]
	return map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": code}}
}

// answer writes one output item: as the response object (stream false), or
// as response.created → response.output_item.done → response.completed
// (the client retries a stream that lacks response.completed).
func (responsesWire) answer(w http.ResponseWriter, a answer) error {
	item := map[string]any{"type": "message", "id": a.id("msg_"), "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": a.reply.Text, "annotations": []any{}}}}
	if a.reply.Tool != "" {
		item = map[string]any{"type": "function_call", "id": a.id("fc_"), "call_id": a.callID,
			"name": a.reply.Tool, "arguments": string(a.args), "status": "completed"}
	}
	resp := func(status string, output []any) map[string]any {
		r := map[string]any{"id": a.id("resp_"), "object": "response", "created_at": 0,
			"status": status, "model": a.model(), "output": output}
		if status == "completed" {
			r["usage"] = map[string]any{"input_tokens": a.in, "input_tokens_details": map[string]any{"cached_tokens": 0},
				"output_tokens": a.out, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
				"total_tokens": a.in + a.out}
		}
		return r
	}
	if !a.turn.Stream {
		writeJSON(w, http.StatusOK, resp("completed", []any{item}))
		return nil
	}
	s := startSSE(w)
	s.event("response.created", map[string]any{"type": "response.created", "sequence_number": 0, "response": resp("in_progress", []any{})})
	s.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "sequence_number": 1, "output_index": 0, "item": item})
	s.event("response.completed", map[string]any{"type": "response.completed", "sequence_number": 2, "response": resp("completed", []any{item})})
	return s.err
}
