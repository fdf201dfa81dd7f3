package model

import (
	"encoding/json"
	"net/http"
)

// anthropicWire is the Anthropic Messages API (Claude Code).
type anthropicWire struct{}

func (anthropicWire) name() string { return "anthropic" }

func (anthropicWire) parse(body []byte) (turn, error) {
	var req struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"` // a string, or blocks
		} `json:"messages"`
		Tools []struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return turn{}, err
	}
	t := turn{Model: req.Model, Stream: req.Stream}
	for _, tl := range req.Tools {
		// Server tools (web search and the like) have a type and no schema.
		callable := (tl.Type == "" || tl.Type == "custom") && len(tl.InputSchema) > 0
		t.Tools = append(t.Tools, tool{Name: tl.Name, Props: schemaProps(tl.InputSchema), Callable: callable})
	}
	for _, m := range req.Messages {
		var blocks []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
			IsError bool            `json:"is_error"`
		}
		if m.Role != "user" || json.Unmarshal(m.Content, &blocks) != nil {
			continue // a plain string message holds no tool result
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				t.Results = append(t.Results, result{Text: textOf(b.Content), IsError: b.IsError})
			}
		}
	}
	return t, nil
}

func (anthropicWire) errorBody(kind errKind, msg string) any {
	typ := map[errKind]string{kindInvalid: "invalid_request_error", kindAuth: "authentication_error",
		kindNotFound: "not_found_error", kindTooLarge: "request_too_large", kindMedia: "invalid_request_error"}[kind]
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
}

// countTokens answers /v1/messages/count_tokens with an estimate.
func countTokens(w http.ResponseWriter, body []byte) int {
	writeJSON(w, http.StatusOK, map[string]any{"input_tokens": len(body)/4 + 1})
	return http.StatusOK
}

// answer writes the reply as one message: JSON, or the SSE sequence
// message_start → content_block_start → content_block_delta →
// content_block_stop → message_delta → message_stop.
func (anthropicWire) answer(w http.ResponseWriter, a answer) error {
	stop := "end_turn"
	block := map[string]any{"type": "text", "text": a.reply.Text}
	if a.reply.Tool != "" {
		stop = "tool_use"
		block = map[string]any{"type": "tool_use", "id": a.callID, "name": a.reply.Tool, "input": a.args}
	}
	usage := map[string]any{"input_tokens": a.in, "output_tokens": a.out,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	msg := map[string]any{"id": a.id("msg_"), "type": "message", "role": "assistant", "model": a.model(),
		"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage}
	if !a.turn.Stream {
		writeJSON(w, http.StatusOK, msg)
		return nil
	}
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"], start["stop_reason"] = []any{}, nil
	start["usage"] = map[string]any{"input_tokens": a.in, "output_tokens": 1,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	first := map[string]any{"type": "text", "text": ""}
	delta := map[string]any{"type": "text_delta", "text": a.reply.Text}
	if a.reply.Tool != "" {
		first = map[string]any{"type": "tool_use", "id": a.callID, "name": a.reply.Tool, "input": map[string]any{}}
		delta = map[string]any{"type": "input_json_delta", "partial_json": string(a.args)}
	}
	s := startSSE(w)
	s.event("message_start", map[string]any{"type": "message_start", "message": start})
	s.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": first})
	s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": delta})
	s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	s.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"input_tokens": a.in, "output_tokens": a.out}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
	return s.err
}
