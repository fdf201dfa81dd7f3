package agents_test

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// anthropic answers POST /v1/messages (streaming or not).
func (s *standin) anthropic(w http.ResponseWriter, body []byte, rec *standinRecord) {
	var req struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, t := range req.Tools {
		rec.Tools = append(rec.Tools, t.Name)
	}
	for _, m := range req.Messages {
		var blocks []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(m.Content, &blocks)
		for _, b := range blocks {
			if b.Type == "tool_result" {
				rec.Step++
				rec.ToolResult = text(b.Content)
			}
		}
	}
	name, args := s.shellArgs(rec.Tools)
	final := rec.Step > 0 || name == ""
	argJSON, _ := json.Marshal(args)
	var block map[string]any
	stop := "end_turn"
	if final {
		block = map[string]any{"type": "text", "text": finalAnswer}
	} else {
		rec.Call = name + " " + string(argJSON)
		block = map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%02d", rec.Step), "name": name, "input": args}
		stop = "tool_use"
	}
	usage := map[string]any{"input_tokens": 10, "output_tokens": 5}
	if !req.Stream {
		json.NewEncoder(w).Encode(map[string]any{"id": "msg_standin", "type": "message", "role": "assistant",
			"model": "gh-scripted", "content": []any{block}, "stop_reason": stop, "usage": usage})
		return
	}
	sseHeaders(w)
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_standin", "type": "message", "role": "assistant", "model": "gh-scripted",
		"content": []any{}, "stop_reason": nil, "usage": usage}})
	start, delta := map[string]any{"type": "text", "text": ""}, map[string]any{"type": "text_delta", "text": finalAnswer}
	if !final {
		start = map[string]any{"type": "tool_use", "id": block["id"], "name": name, "input": map[string]any{}}
		delta = map[string]any{"type": "input_json_delta", "partial_json": string(argJSON)}
	}
	sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": start})
	sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": delta})
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop}, "usage": map[string]any{"output_tokens": 5}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// responses answers POST /v1/responses (OpenAI Responses, SSE).
func (s *standin) responses(w http.ResponseWriter, body []byte, rec *standinRecord) {
	var req struct {
		Input []struct {
			Type   string          `json:"type"`
			Output json.RawMessage `json:"output"`
		} `json:"input"`
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, t := range req.Tools {
		rec.Tools = append(rec.Tools, t.Name)
	}
	for _, in := range req.Input {
		if in.Type == "function_call_output" {
			rec.Step++
			rec.ToolResult = text(in.Output)
		}
	}
	name, args := s.shellArgs(rec.Tools)
	item := map[string]any{"type": "message", "id": "msg_standin", "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": finalAnswer, "annotations": []any{}}}}
	if rec.Step == 0 && name != "" {
		argJSON, _ := json.Marshal(args)
		rec.Call = name + " " + string(argJSON)
		item = map[string]any{"type": "function_call", "id": "fc_standin", "call_id": fmt.Sprintf("call_%02d", rec.Step),
			"name": name, "arguments": string(argJSON), "status": "completed"}
	}
	sseHeaders(w)
	resp := map[string]any{"id": "resp_standin", "object": "response", "status": "in_progress", "output": []any{}}
	sse(w, "response.created", map[string]any{"type": "response.created", "response": resp})
	sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	resp = map[string]any{"id": "resp_standin", "object": "response", "status": "completed", "output": []any{item},
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": resp})
}

// chat answers POST /v1/chat/completions (OpenAI Chat, SSE or not).
func (s *standin) chat(w http.ResponseWriter, body []byte, rec *standinRecord) {
	var req struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct{ Name string } `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, t := range req.Tools {
		rec.Tools = append(rec.Tools, t.Function.Name)
	}
	for _, m := range req.Messages {
		if m.Role == "tool" {
			rec.Step++
			rec.ToolResult = text(m.Content)
		}
	}
	name, args := s.shellArgs(rec.Tools)
	msg := map[string]any{"role": "assistant", "content": finalAnswer}
	finish := "stop"
	if rec.Step == 0 && name != "" {
		argJSON, _ := json.Marshal(args)
		rec.Call = name + " " + string(argJSON)
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"index": 0, "id": "call_00", "type": "function",
			"function": map[string]any{"name": name, "arguments": string(argJSON)}}}}
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	base := map[string]any{"id": "chatcmpl-standin", "created": 0, "model": "gh-scripted"}
	if !req.Stream {
		base["object"] = "chat.completion"
		base["choices"] = []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}
		base["usage"] = usage
		json.NewEncoder(w).Encode(base)
		return
	}
	sseHeaders(w)
	chunk := func(choices []any, usage any) map[string]any {
		c := map[string]any{"object": "chat.completion.chunk", "choices": choices}
		for k, v := range base {
			c[k] = v
		}
		if usage != nil {
			c["usage"] = usage
		}
		return c
	}
	sse(w, "", chunk([]any{map[string]any{"index": 0, "delta": msg, "finish_reason": nil}}, nil))
	sse(w, "", chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, nil))
	sse(w, "", chunk([]any{}, usage))
	w.Write([]byte("data: [DONE]\n\n"))
}
