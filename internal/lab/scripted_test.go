package lab

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab/model"
)

// The scripted model's requests are hits on "inference" pinned on the
// session by its key, and transcript records kept per session and written
// as JSON lines; the key's control token attributes other hits too.
func TestScriptedModelHitsAndTranscript(t *testing.T) {
	var trace bytes.Buffer
	l := &Lab{hits: newHitLog(0, nil), transcript: newTranscriptLog(&trace), sessions: map[string]*attachment{},
		bySrc: map[netip.Addr]string{}, byTag: map[string]string{}, alive: map[string]bool{}}
	l.Track("s1")
	l.Track("s2") // two alive: nothing is pinned on a session by elimination
	key := model.Key("s1", "ghctl00112233445566ff")
	if err := l.ScriptModel(key, model.Script{Session: "s1", Document: "/gatehouse/work/report.md"}); err != nil {
		t.Fatal(err)
	}
	if err := l.ScriptModel(key, model.Script{Session: "s2"}); err == nil {
		t.Error("a key was moved to another session")
	}
	ts := httptest.NewServer(l.modelHandler())
	defer ts.Close()
	body, err := os.ReadFile("model/testdata/claude-step0.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{key, "gh.s1.unknown"} {
		req, _ := http.NewRequest("POST", ts.URL+"/v1/messages?beta=true", bytes.NewReader(body))
		req.Header.Set("x-api-key", k)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	hits := l.Hits()
	if len(hits) != 2 {
		t.Fatalf("hits %+v", hits)
	}
	if h := hits[0]; h.Endpoint != "inference" || h.Session != "s1" || h.Attribution != "key" || !h.Served ||
		!strings.Contains(h.Summary, "model=anthropic step=0") || !strings.Contains(h.Data, "ghctl00112233445566ff") {
		t.Errorf("known key hit %+v", h)
	}
	if h := hits[1]; h.Session != "" || h.Served {
		t.Errorf("unknown key hit %+v", h)
	}
	tr := l.Transcript("s1")
	if len(tr) != 1 || tr[0].Call == nil || tr[0].Call.Name != "Read" || tr[0].Status != 200 {
		t.Fatalf("transcript %+v", tr)
	}
	lines := strings.Split(strings.TrimSpace(trace.String()), "\n")
	var first model.Record
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &first) != nil || first.Session != "s1" {
		t.Errorf("trace file %q", trace.String())
	}
	// The control token in any other hit (say, the key sent to the
	// callback) is the session's tag.
	got := l.record(evidence.Hit{Endpoint: "callback", Summary: "GET /k/" + key}, "203.0.113.1:1")
	if got.Session != "s1" || got.Attribution != "tag" {
		t.Errorf("callback hit with the key: %+v", got)
	}
}
