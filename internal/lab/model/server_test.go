package model_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/lab/model"
	"github.com/gatehouse-dev/gatehouse/internal/termsafe"
)

func TestPreconnectAndModelList(t *testing.T) {
	l := newLab(t, 0)
	resp, err := http.Head(l.url + "/")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("HEAD /: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = http.Get(l.url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct{ ID string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Data) != 1 || list.Data[0].ID != model.Name {
		t.Errorf("models: %d %+v %v", resp.StatusCode, list, err)
	}
	var apis []string
	for _, e := range l.exchanges() {
		apis = append(apis, e.Record.API)
	}
	if strings.Join(apis, ",") != "preconnect,models" {
		t.Errorf("records %v", apis)
	}
}

func TestWrongMethodAndPathAreRefused(t *testing.T) {
	l := newLab(t, 0)
	resp, err := http.Get(l.url + "/v1/messages")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(string(b), `"invalid_request_error"`) {
		t.Errorf("GET /v1/messages: %d %s", resp.StatusCode, b)
	}
	// Only Patterns reach the model in the lab; served bare it still
	// answers an unknown path with 404, and records it.
	rec := httptest.NewRecorder()
	model.New(model.Options{}).ServeHTTP(rec, httptest.NewRequest("POST", "/v1/embeddings", strings.NewReader("{}")))
	if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "not_found_error") {
		t.Errorf("unknown path: %d %s", rec.Code, rec.Body)
	}
}

// A request whose agent offers no shell tool ends the script with a clear
// answer instead of a call it cannot make.
func TestAMissingShellToolEndsTheScript(t *testing.T) {
	l := newLab(t, 0)
	var req map[string]any
	_ = json.Unmarshal(fixture(t, "chat-step1.json"), &req)
	req["tools"] = req["tools"].([]any)[:1] // read_file only
	b, _ := json.Marshal(req)
	_, _, out := post(t, l, "/v1/chat/completions", b, bearerKey)
	got := decodeChat(t, out, false)
	if r := last(t, l); got.Name != "" || got.Stop != "stop" || r.Why != "tool-unavailable" || !r.Final {
		t.Errorf("answer %+v, record %+v", got, r)
	}
}

func TestRecordsKeepCanariesAndRedactedHidesThem(t *testing.T) {
	l := newLab(t, 0)
	post(t, l, "/v1/messages", fixture(t, "claude-step1-string.json"), anthropicKey)
	ex := l.exchanges()[0]
	r := ex.Record
	if !ex.Known || r.Session != "s1" || r.Call == nil || r.Call.Command != directives[0] || !r.Call.Escalated {
		t.Fatalf("record %+v", r)
	}
	if !strings.Contains(r.Excerpt, "ghc0123456789abcdef") || !strings.Contains(string(ex.Body), `"tool_result"`) {
		t.Errorf("the trace must keep what arrived: excerpt %q", r.Excerpt)
	}
	red := r.Redacted()
	all, _ := json.Marshal(red)
	if strings.Contains(string(all), "ghc0123456789abcdef") || !strings.Contains(red.Call.Command, "<canary>") {
		t.Errorf("redacted record still shows the canary: %s", all)
	}
	if !strings.Contains(r.Call.Command, "ghc0123456789abcdef") {
		t.Error("Redacted changed the record it was called on")
	}
}

func TestDirectives(t *testing.T) {
	long := "GATEHOUSE-DO: echo " + strings.Repeat("x", model.MaxDirectiveLen) + "\n"
	for _, c := range []struct {
		name, text string
		want       int
		first      string
	}{
		{"after a line number", "     7\u2192GATEHOUSE-DO: id\n", 1, "id"},
		{"CRLF and spaces trimmed", "GATEHOUSE-DO:   id  \r\n", 1, "id"},
		{"empty commands skipped", "GATEHOUSE-DO: \nGATEHOUSE-DO: id\n", 1, "id"},
		{"over-long commands skipped", long + "GATEHOUSE-DO: id\n", 1, "id"},
		{"marker needs its space", "GATEHOUSE-DO:id\n", 0, ""},
		{"capped", strings.Repeat("GATEHOUSE-DO: id\n", model.MaxDirectives+5), model.MaxDirectives, "id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := model.Directives(c.text)
			if len(got) != c.want || (c.want > 0 && got[0] != c.first) {
				t.Errorf("Directives = %q", got)
			}
		})
	}
}

// A tool call's arguments are what the agent sent: printed redacted, they
// stay JSON and hold nothing a terminal acts on.
func TestRedactedArgumentsStayJSONAndInert(t *testing.T) {
	for _, args := range []string{
		"{\n\t\"command\": \"cat ghc0123456789abcdef \x7f\u0085\u202e\",\r\n \"x\": 1}",
		"{\"path\": \"bad \xff byte\"}",
		"not json \x1b[2J ghc0123456789abcdef",
	} {
		r := model.Record{Path: "/v1/messages\x1b[2J", Tools: []string{"Bash\u202e"}, Call: &model.Call{Arguments: json.RawMessage(args)}}
		red := r.Redacted()
		b, err := json.Marshal(red)
		if err != nil {
			t.Errorf("%q: the redacted record is not JSON: %v", args, err)
			continue
		}
		s := string(red.Call.Arguments) + red.Path + strings.Join(red.Tools, "")
		if strings.Contains(s, "ghc0123456789abcdef") {
			t.Errorf("%q: the canary survived: %s", args, s)
		}
		for _, r := range s {
			if termsafe.Hidden(r) {
				t.Errorf("%q: %U survived: %s (record %s)", args, r, s, b)
			}
		}
	}
}
