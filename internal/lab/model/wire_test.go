package model_test

import (
	"encoding/json"
	"slices"
	"testing"
)

// call is an answer read back as the agent would read it.
type call struct {
	ID, Name string
	Args     map[string]any
	Text     string
	Stop     string // stop_reason, finish_reason, or the response status
}

// wireAPI reads one API's answers back and extends a conversation with a
// tool result, the way the agent would send its next request.
type wireAPI struct {
	path   string
	hdr    map[string]string
	decode func(t *testing.T, body []byte, stream bool) call
	extend func(req map[string]any, c call, result string, isError bool)
}

var anthropicAPI = wireAPI{"/v1/messages?beta=true", anthropicKey, decodeAnthropic, func(req map[string]any, c call, res string, isErr bool) {
	req["messages"] = append(req["messages"].([]any),
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.Args}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": c.ID, "content": res, "is_error": isErr}}})
}}

var responsesAPI = wireAPI{"/v1/responses", bearerKey, decodeResponses, func(req map[string]any, c call, res string, _ bool) {
	args, _ := json.Marshal(c.Args)
	req["input"] = append(req["input"].([]any),
		map[string]any{"type": "function_call", "call_id": c.ID, "name": c.Name, "arguments": string(args)},
		map[string]any{"type": "function_call_output", "call_id": c.ID, "output": res})
}}

var chatAPI = wireAPI{"/v1/chat/completions", bearerKey, decodeChat, func(req map[string]any, c call, res string, _ bool) {
	args, _ := json.Marshal(c.Args)
	req["messages"] = append(req["messages"].([]any),
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": string(args)}}}},
		map[string]any{"role": "tool", "tool_call_id": c.ID, "content": res})
}}

func unmarshal(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, s)
	}
}

// decodeAnthropic checks the exact event sequence and rebuilds the message.
func decodeAnthropic(t *testing.T, body []byte, stream bool) call {
	t.Helper()
	type block struct {
		Type, ID, Name, Text string
		Input                map[string]any
	}
	var c call
	if !stream {
		var m struct {
			StopReason string `json:"stop_reason"`
			Content    []block
		}
		unmarshal(t, string(body), &m)
		if len(m.Content) != 1 {
			t.Fatalf("content = %+v, want one block", m.Content)
		}
		b := m.Content[0]
		return call{ID: b.ID, Name: b.Name, Args: b.Input, Text: b.Text, Stop: m.StopReason}
	}
	evs := parseSSE(t, body)
	want := []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if got := eventNames(evs); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	var start struct {
		Message struct {
			Usage struct {
				InputTokens int `json:"input_tokens"`
			}
		}
	}
	unmarshal(t, evs[0].Data, &start)
	var cbs struct {
		ContentBlock block `json:"content_block"`
	}
	unmarshal(t, evs[1].Data, &cbs)
	var delta struct {
		Delta struct {
			Type, Text  string
			PartialJSON string `json:"partial_json"`
		}
	}
	unmarshal(t, evs[2].Data, &delta)
	var md struct {
		Delta struct {
			StopReason string `json:"stop_reason"`
		}
		Usage struct {
			OutputTokens int `json:"output_tokens"`
		}
	}
	unmarshal(t, evs[4].Data, &md)
	if start.Message.Usage.InputTokens <= 0 || md.Usage.OutputTokens <= 0 {
		t.Errorf("usage missing: message_start %s, message_delta %s", evs[0].Data, evs[4].Data)
	}
	c.Stop = md.Delta.StopReason
	switch cbs.ContentBlock.Type {
	case "tool_use":
		if delta.Delta.Type != "input_json_delta" || len(cbs.ContentBlock.Input) != 0 {
			t.Fatalf("tool_use block %s, delta %s", evs[1].Data, evs[2].Data)
		}
		c.ID, c.Name = cbs.ContentBlock.ID, cbs.ContentBlock.Name
		unmarshal(t, delta.Delta.PartialJSON, &c.Args)
	case "text":
		if delta.Delta.Type != "text_delta" {
			t.Fatalf("text block with delta %s", evs[2].Data)
		}
		c.Text = delta.Delta.Text
	default:
		t.Fatalf("content block %s", evs[1].Data)
	}
	return c
}
