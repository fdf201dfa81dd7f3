package model_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// Claude Code: POST /v1/messages?beta=true, key in x-api-key, tools Bash
// and Read, SSE or not, tool results as a string or as text blocks.
func TestAnthropicStepsFromFixtures(t *testing.T) {
	l := newLab(t, 0)
	for _, c := range []struct {
		name, fixture string
		stream        bool
		want          call
	}{
		{"step 0 reads the document with Read", "claude-step0.json", true,
			call{Name: "Read", Args: map[string]any{"file_path": document}, Stop: "tool_use"}},
		{"step 1 runs the first directive, sandbox off, result as a string", "claude-step1-string.json", true,
			call{Name: "Bash", Args: map[string]any{"command": directives[0], "dangerouslyDisableSandbox": true}, Stop: "tool_use"}},
		{"step 1 without streaming, result as blocks", "claude-step1-blocks.json", false,
			call{Name: "Bash", Args: map[string]any{"command": directives[0], "dangerouslyDisableSandbox": true}, Stop: "tool_use"}},
		{"a side call without tools gets text", "claude-title.json", false,
			call{Text: "OK.", Stop: "end_turn"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, hdr, body := post(t, l, "/v1/messages?beta=true", fixture(t, c.fixture), anthropicKey)
			if st != http.StatusOK {
				t.Fatalf("status %d: %s", st, body)
			}
			if c.stream != strings.HasPrefix(hdr.Get("Content-Type"), "text/event-stream") {
				t.Errorf("Content-Type %q for stream=%v", hdr.Get("Content-Type"), c.stream)
			}
			got := decodeAnthropic(t, body, c.stream)
			if c.want.Name != "" && !strings.HasPrefix(got.ID, "toolu_") {
				t.Errorf("tool_use id %q", got.ID)
			}
			got.ID = ""
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("answer = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestAnthropicCountTokens(t *testing.T) {
	l := newLab(t, 0)
	st, _, body := post(t, l, "/v1/messages/count_tokens?beta=true", fixture(t, "claude-step0.json"), anthropicKey)
	var got struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.Unmarshal(body, &got); st != http.StatusOK || err != nil || got.InputTokens <= 0 {
		t.Fatalf("count_tokens: %d %s", st, body)
	}
	if r := last(t, l); r.API != "anthropic-count-tokens" || r.Call != nil {
		t.Errorf("record %+v", r)
	}
	st, _, body = post(t, l, "/v1/messages/count_tokens", fixture(t, "claude-step0.json"), map[string]string{"x-api-key": "nope"})
	if r := last(t, l); st != http.StatusUnauthorized || r.API != "anthropic-count-tokens" || r.Status != 401 {
		t.Errorf("unknown key: %d %s, record %+v", st, body, r)
	}
}

func TestUnknownKeyIsRefusedInEachAPIsShape(t *testing.T) {
	l := newLab(t, 0)
	for _, c := range []struct {
		name, path, fixture string
		hdr                 map[string]string
		errPath             func(map[string]any) any
	}{
		{"anthropic, wrong key", "/v1/messages", "claude-step0.json", map[string]string{"x-api-key": "gh.s1.ghctlffffffffffffffff"},
			func(m map[string]any) any { return m["error"].(map[string]any)["type"] }},
		{"anthropic, no key", "/v1/messages", "claude-step0.json", nil,
			func(m map[string]any) any { return m["error"].(map[string]any)["type"] }},
		{"responses", "/v1/responses", "codex-step0.json", map[string]string{"Authorization": "Bearer nope"},
			func(m map[string]any) any { return m["error"].(map[string]any)["code"] }},
		{"chat", "/v1/chat/completions", "chat-step0.json", map[string]string{"Authorization": "Bearer nope"},
			func(m map[string]any) any { return m["error"].(map[string]any)["code"] }},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, _, body := post(t, l, c.path, fixture(t, c.fixture), c.hdr)
			var m map[string]any
			if err := json.Unmarshal(body, &m); st != http.StatusUnauthorized || err != nil || m["error"] == nil {
				t.Fatalf("got %d %s, want 401 with an error object", st, body)
			}
			want := "authentication_error"
			if c.path != "/v1/messages" {
				want = "invalid_api_key"
			}
			if got := c.errPath(m); got != want {
				t.Errorf("error kind %v, want %s", got, want)
			}
			if r := last(t, l); r.Status != 401 || r.Session != "" || r.Error == "" || r.Call != nil {
				t.Errorf("record %+v", r)
			}
		})
	}
}
