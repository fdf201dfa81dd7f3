package model

import (
	"encoding/json"
	"net/http"
)

// chatWire is the OpenAI Chat Completions API (Qwen Code, a team's own agent).
type chatWire struct{}

func (chatWire) name() string { return "openai-chat" }

func (chatWire) parse(body []byte) (turn, error) {
	var req struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return turn{}, err
	}
	t := turn{Model: req.Model, Stream: req.Stream}
	for _, tl := range req.Tools {
		t.Tools = append(t.Tools, tool{Name: tl.Function.Name, Props: schemaProps(tl.Function.Parameters),
			Callable: tl.Type == "function" || tl.Type == ""})
	}
	for _, m := range req.Messages {
		if m.Role == "tool" || m.Role == "function" { // "function" is the legacy role
			t.Results = append(t.Results, result{Text: textOf(m.Content)})
		}
	}
	return t, nil
}

func (chatWire) errorBody(kind errKind, msg string) any { return openaiError(kind, msg) }

// answer writes one choice: a chat.completion object, or chunks (the tool
// call's name and id first, its arguments next, then finish_reason) ending
// with "data: [DONE]".
func (chatWire) answer(w http.ResponseWriter, a answer) error {
	id, model := a.id("chatcmpl-"), a.model()
	usage := map[string]any{"prompt_tokens": a.in, "completion_tokens": a.out, "total_tokens": a.in + a.out}
	finish := "stop"
	msg := map[string]any{"role": "assistant", "content": a.reply.Text}
	if a.reply.Tool != "" {
		finish = "tool_calls"
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": a.callID, "type": "function", "function": map[string]any{"name": a.reply.Tool, "arguments": string(a.args)}}}}
	}
	if !a.turn.Stream {
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "chat.completion", "created": 0, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return nil
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	s := startSSE(w)
	if a.reply.Tool != "" {
		s.event("", chunk(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"index": 0,
			"id": a.callID, "type": "function", "function": map[string]any{"name": a.reply.Tool, "arguments": ""}}}}, nil))
		s.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0,
			"function": map[string]any{"arguments": string(a.args)}}}}, nil))
	} else {
		s.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
		s.event("", chunk(map[string]any{"content": a.reply.Text}, nil))
	}
	s.event("", chunk(map[string]any{}, finish))
	// Usage comes as a last chunk with no choices, as with include_usage.
	last := chunk(map[string]any{}, nil)
	last["choices"], last["usage"] = []any{}, usage
	s.event("", last)
	s.data("", []byte("[DONE]"))
	return s.err
}
