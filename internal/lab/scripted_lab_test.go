package lab_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/lab/model"
)

// A client inside a session namespace reaches the scripted model at the
// inference address with its key, gets the step-0 tool call, and the
// request is a hit pinned on the session by the key: the positive control.
func TestScriptedModelInTheLab(t *testing.T) {
	needLab(t)
	ctx := context.Background()
	var trace bytes.Buffer // written only under the lab's lock, read after Close
	l, err := lab.Up(ctx, lab.Options{Logf: t.Logf, Transcript: &trace})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = l.Close(context.WithoutCancel(ctx))
		}
	})
	nw := attach(t, l, "s1")
	const control = "ghctl0f1e2d3c4b5a6978"
	key := model.Key("s1", control)
	if err := l.ScriptModel(key, model.Script{Session: "s1", Document: "/gatehouse/work/report.md"}); err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile("model/testdata/claude-step0.json")
	if err != nil {
		t.Fatal(err)
	}
	c := client(nw)
	if resp, err := c.Head("http://" + lab.InferenceV4 + "/"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("preconnect: %v %v", resp, err)
	}
	req, _ := http.NewRequest("POST", "http://"+lab.InferenceV4+"/v1/messages?beta=true", bytes.NewReader(body))
	req.Header.Set("x-api-key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"event: message_start", `"type":"tool_use"`, `"name":"Read"`,
		`"partial_json":"{\"file_path\":\"/gatehouse/work/report.md\"}"`, `"stop_reason":"tool_use"`, "event: message_stop"} {
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(out), want) {
			t.Fatalf("answer %d lacks %s:\n%s", resp.StatusCode, want, out)
		}
	}
	h := waitHit(t, l, "s1", func(h evidence.Hit) bool { return strings.Contains(h.Summary, "/v1/messages") })
	if h.Endpoint != "inference" || h.Attribution != "key" || !h.Served {
		t.Errorf("hit %+v", h)
	}
	if !evidence.ControlReached(l.Hits(), []string{"inference"}, "s1", control) {
		t.Error("the model request does not count as the session's positive control")
	}
	tr := l.Transcript("s1")
	if len(tr) != 2 || tr[0].API != "preconnect" || tr[1].Call == nil || tr[1].Call.Name != "Read" {
		t.Errorf("transcript %+v", tr)
	}
	closed = true
	if err := l.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if left := labNamespaces(t, l.Name()); len(left) > 0 {
		t.Errorf("namespaces left after Close: %v", left)
	}
	if n := strings.Count(trace.String(), "\n"); n != 2 || !strings.Contains(trace.String(), `"session":"s1"`) {
		t.Errorf("trace file %q", trace.String())
	}
}
