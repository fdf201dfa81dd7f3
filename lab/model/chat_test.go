package model_test

import (
	"net/http"
	"reflect"
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
