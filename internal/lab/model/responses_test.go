package model_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// Codex: POST /v1/responses, bearer key, exec_command among its tools, no
// read tool (it reads with cat), function_call_output as a string.
func TestResponsesStepsFromFixtures(t *testing.T) {
	l := newLab(t, 0)
	for _, c := range []struct {
		name, fixture string
		want          call
	}{
		{"step 0 reads the document with cat, no escalation", "codex-step0.json",
			call{Name: "exec_command", Args: map[string]any{"cmd": "cat -- '" + document + "'"}, Stop: "completed"}},
		{"step 1 runs the first directive and asks to leave the sandbox", "codex-step1.json",
			call{Name: "exec_command", Args: map[string]any{"cmd": directives[0], "sandbox_permissions": "require_escalated",
				"justification": "The task document asks for this check."}, Stop: "completed"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, _, body := post(t, l, "/v1/responses", fixture(t, c.fixture), bearerKey)
			if st != http.StatusOK {
				t.Fatalf("status %d: %s", st, body)
			}
			got := decodeResponses(t, body, true)
			if !strings.HasPrefix(got.ID, "call_") {
				t.Errorf("call_id %q", got.ID)
			}
			got.ID = ""
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("answer = %+v, want %+v", got, c.want)
			}
		})
	}
}

// Codex refuses an escalated command under approval_policy=never; the
// model then runs the same command without asking.
func TestResponsesRetriesARefusedEscalationPlainly(t *testing.T) {
	l := newLab(t, 0)
	var req map[string]any
	if err := json.Unmarshal(fixture(t, "codex-step1.json"), &req); err != nil {
		t.Fatal(err)
	}
	first := call{ID: "call_x1", Name: "exec_command", Args: map[string]any{"cmd": directives[0], "sandbox_permissions": "require_escalated"}}
	responsesAPI.extend(req, first, "approval policy is Never; reject command — you should not ask for escalated permissions if the approval policy is Never", false)
	body, _ := json.Marshal(req)
	_, _, out := post(t, l, "/v1/responses", body, bearerKey)
	got := decodeResponses(t, out, true)
	if want := map[string]any{"cmd": directives[0]}; !reflect.DeepEqual(got.Args, want) {
		t.Errorf("after a refusal: %+v, want the same command plainly %v", got.Args, want)
	}
	if r := last(t, l); r.Step != 2 || r.Call == nil || r.Call.Escalated || !strings.Contains(r.Excerpt, "reject command") {
		t.Errorf("record %+v", r)
	}
}

func TestResponsesWithoutStreaming(t *testing.T) {
	l := newLab(t, 0)
	var req map[string]any
	_ = json.Unmarshal(fixture(t, "codex-step0.json"), &req)
	req["stream"] = false
	body, _ := json.Marshal(req)
	st, hdr, out := post(t, l, "/v1/responses", body, bearerKey)
	if st != http.StatusOK || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s: %s", st, hdr.Get("Content-Type"), out)
	}
	if got := decodeResponses(t, out, false); got.Name != "exec_command" {
		t.Errorf("answer %+v", got)
	}
}

// Request bodies may be compressed; an encoding the model cannot undo is
// refused clearly, not misread.
func TestResponsesCompressedBodies(t *testing.T) {
	l := newLab(t, 0)
	plain := fixture(t, "codex-step1.json")
	var gz, zs bytes.Buffer
	gw := gzip.NewWriter(&gz)
	_, _ = gw.Write(plain)
	_ = gw.Close()
	zw, err := zstd.NewWriter(&zs)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = zw.Write(plain)
	_ = zw.Close()
	for _, c := range []struct {
		enc  string
		body []byte
	}{{"gzip", gz.Bytes()}, {"zstd", zs.Bytes()}} {
		t.Run(c.enc, func(t *testing.T) {
			hdr := map[string]string{"Authorization": "Bearer " + key, "Content-Encoding": c.enc}
			st, _, out := post(t, l, "/v1/responses", c.body, hdr)
			if st != http.StatusOK {
				t.Fatalf("status %d: %s", st, out)
			}
			if got := decodeResponses(t, out, true); got.Args["cmd"] != directives[0] {
				t.Errorf("answer %+v, want the first directive", got)
			}
		})
	}
	t.Run("br is refused with 415", func(t *testing.T) {
		hdr := map[string]string{"Authorization": "Bearer " + key, "Content-Encoding": "br"}
		st, _, out := post(t, l, "/v1/responses", plain, hdr)
		if st != http.StatusUnsupportedMediaType || !strings.Contains(string(out), `"code":"unsupported_content_encoding"`) {
			t.Errorf("got %d %s", st, out)
		}
	})
}

// decodeResponses checks response.created → response.output_item.done →
// response.completed (with id and usage) and reads the item.
func decodeResponses(t *testing.T, body []byte, stream bool) call {
	t.Helper()
	type item struct {
		Type, Name, Arguments string
		CallID                string `json:"call_id"`
		Content               []struct{ Type, Text string }
	}
	type response struct {
		ID, Status string
		Output     []item
		Usage      *struct {
			TotalTokens int `json:"total_tokens"`
		}
	}
	var done response
	if stream {
		evs := parseSSE(t, body)
		want := []string{"response.created", "response.output_item.done", "response.completed"}
		if got := eventNames(evs); !slices.Equal(got, want) {
			t.Fatalf("events = %v, want %v", got, want)
		}
		for _, e := range evs {
			var typ struct{ Type string }
			if unmarshal(t, e.Data, &typ); typ.Type != e.Name {
				t.Errorf("event %s carries type %q", e.Name, typ.Type)
			}
		}
		var ev struct{ Response response }
		unmarshal(t, evs[2].Data, &ev)
		done = ev.Response
	} else {
		unmarshal(t, string(body), &done)
	}
	if done.ID == "" || done.Usage == nil || done.Usage.TotalTokens <= 0 || len(done.Output) != 1 {
		t.Fatalf("completed response lacks id, usage or its one item: %s", body)
	}
	it := done.Output[0]
	c := call{Stop: done.Status}
	switch it.Type {
	case "function_call":
		c.ID, c.Name = it.CallID, it.Name
		unmarshal(t, it.Arguments, &c.Args) // arguments travel as a JSON string
	case "message":
		c.Text = it.Content[0].Text
	default:
		t.Fatalf("output item %+v", it)
	}
	return c
}
