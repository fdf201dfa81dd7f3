package model_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// OpenAI Chat (Qwen Code's tools): read_file at step 0, run_shell_command
// after, tool results as role "tool" messages.
func TestChatStepsFromFixtures(t *testing.T) {
	l := newLab(t, 0)
	for _, c := range []struct {
		name, fixture string
		stream        bool
		want          call
	}{
		{"step 0 streams a read_file call", "chat-step0.json", true,
			call{Name: "read_file", Args: map[string]any{"file_path": document}, Stop: "tool_calls"}},
		{"step 1 answers a run_shell_command call, not streamed", "chat-step1.json", false,
			call{Name: "run_shell_command", Args: map[string]any{"command": directives[0]}, Stop: "tool_calls"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, _, body := post(t, l, "/v1/chat/completions", fixture(t, c.fixture), bearerKey)
			if st != http.StatusOK {
				t.Fatalf("status %d: %s", st, body)
			}
			got := decodeChat(t, body, c.stream)
			if got.ID == "" {
				t.Error("tool call without id")
			}
			got.ID = ""
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("answer = %+v, want %+v", got, c.want)
			}
		})
	}
}

// decodeChat reassembles chunks by tool-call index, as clients do, and
// checks the stream ends with data: [DONE].
func decodeChat(t *testing.T, body []byte, stream bool) call {
	t.Helper()
	type toolCall struct {
		Index    int
		ID       string
		Function struct{ Name, Arguments string }
	}
	type msg struct {
		Content   *string
		ToolCalls []toolCall `json:"tool_calls"`
	}
	var c call
	var args strings.Builder
	take := func(m msg, finish *string) {
		if m.Content != nil {
			c.Text += *m.Content
		}
		for _, tc := range m.ToolCalls {
			c.ID += tc.ID
			c.Name += tc.Function.Name
			args.WriteString(tc.Function.Arguments)
		}
		if finish != nil {
			c.Stop = *finish
		}
	}
	if !stream {
		var r struct {
			Choices []struct {
				Message      msg
				FinishReason *string `json:"finish_reason"`
			}
		}
		unmarshal(t, string(body), &r)
		take(r.Choices[0].Message, r.Choices[0].FinishReason)
	} else {
		evs := parseSSE(t, body)
		if evs[len(evs)-1].Data != "[DONE]" {
			t.Fatalf("stream does not end with [DONE]: %v", evs)
		}
		for _, e := range evs[:len(evs)-1] {
			var ch struct {
				Object  string
				Choices []struct {
					Delta        msg
					FinishReason *string `json:"finish_reason"`
				}
			}
			if unmarshal(t, e.Data, &ch); ch.Object != "chat.completion.chunk" || e.Name != "" {
				t.Fatalf("chunk %q %s", e.Name, e.Data)
			}
			for _, choice := range ch.Choices {
				take(choice.Delta, choice.FinishReason)
			}
		}
	}
	if args.Len() > 0 {
		unmarshal(t, args.String(), &c.Args)
	}
	return c
}
