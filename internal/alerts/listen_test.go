package alerts_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/internal/alerts"
)

func startListener(t *testing.T, configure func(*alerts.Listener)) *alerts.Listener {
	t.Helper()
	l, err := alerts.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if configure != nil {
		configure(l)
	}
	if err := l.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// replay sends a recorded request to the listener as it was recorded.
func replay(t *testing.T, l *alerts.Listener, name string) *http.Response {
	t.Helper()
	rec := readRequest(t, name)
	req, err := http.NewRequestWithContext(t.Context(), rec.Method, "http://"+l.Addr()+rec.RequestURI, rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = rec.Header
	req.ContentLength = rec.ContentLength
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func post(t *testing.T, l *alerts.Listener, contentType string, body []byte) int {
	t.Helper()
	resp, err := http.Post("http://"+l.Addr()+"/", contentType, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestListenTellsFormatsApart(t *testing.T) {
	l := startListener(t, nil)
	falcoBody := bytes.TrimSpace(readFile(t, "falco_http.json"))
	wantFalco := func(t *testing.T, e detect.Event) {
		t.Helper()
		if e.Source != "falco" || e.Rule != "Unexpected outbound connection" || e.Kind != detect.KindConnect || e.Object != "203.0.113.10:443" || e.Key.LoginUID != 4242 || e.Received.IsZero() {
			t.Errorf("got %+v", e)
		}
	}
	for _, name := range []string{"sidekick_plain.http", "sidekick_ce_binary.http"} {
		t.Run(name, func(t *testing.T) {
			if r := replay(t, l, name); r.StatusCode != http.StatusOK {
				t.Fatalf("status %d", r.StatusCode)
			}
			e := next(t, l.Events())
			wantFalco(t, e)
			if !bytes.Equal(e.Raw, falcoBody) {
				t.Errorf("raw is not the body: %q", e.Raw)
			}
		})
	}
	t.Run("structured cloudevent keeps the whole envelope", func(t *testing.T) {
		replay(t, l, "sidekick_ce_structured.http")
		e := next(t, l.Events())
		wantFalco(t, e)
		if !bytes.HasPrefix(e.Raw, []byte(`{"specversion":"1.0"`)) {
			t.Errorf("raw = %.60q", e.Raw)
		}
	})
	t.Run("falco http_output", func(t *testing.T) {
		if code := post(t, l, "application/json", falcoBody); code != http.StatusOK {
			t.Fatalf("status %d", code)
		}
		wantFalco(t, next(t, l.Events()))
	})
	t.Run("ocsf finding and batch", func(t *testing.T) {
		post(t, l, "application/json", readFile(t, "ocsf_finding.json"))
		if e := next(t, l.Events()); e.Source != "ocsf" || e.Object != "203.0.113.10:80" {
			t.Errorf("got %+v", e)
		}
		post(t, l, "application/json", readFile(t, "ocsf_batch.json"))
		var objs []string
		for range 3 {
			objs = append(objs, next(t, l.Events()).Object)
		}
		if strings.Join(objs, ",") != "exfil-1a2b.canary.lab.test,/home/agent/.aws/credentials," {
			t.Errorf("batch objects %q", objs)
		}
	})
	t.Run("unknown json is kept, matching nothing", func(t *testing.T) {
		if code := post(t, l, "application/json", []byte(`{"hello":"world"}`)); code != http.StatusOK {
			t.Fatalf("status %d", code)
		}
		if e := next(t, l.Events()); e.Source != "http" || e.Kind != "" || string(e.Raw) != `{"hello":"world"}` {
			t.Errorf("got %+v", e)
		}
	})
	t.Run("malformed is refused and kept", func(t *testing.T) {
		if code := post(t, l, "application/json", []byte(`{"rule":`)); code != http.StatusBadRequest {
			t.Fatalf("status %d", code)
		}
		if e := next(t, l.Events()); e.Rule != alerts.RuleUnparsed || string(e.Raw) != `{"rule":` {
			t.Errorf("got %+v", e)
		}
	})
}

func TestListenBoundsBodiesAndFloods(t *testing.T) {
	l := startListener(t, func(l *alerts.Listener) { l.MaxBody = 1024; l.Queue = 8 })
	if code := post(t, l, "application/json", bytes.Repeat([]byte("x"), 4096)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: status %d", code)
	}
	if l.Rejected() != 1 {
		t.Errorf("Rejected = %d", l.Rejected())
	}
	for i := range 50 { // nobody reads: the queue holds 8, the rest are counted
		if code := post(t, l, "application/json", fmt.Appendf(nil, `{"rule":"flood %d","output_fields":{}}`, i)); code != http.StatusOK {
			t.Fatalf("status %d", code)
		}
	}
	if d := l.Dropped(); d != 42 {
		t.Errorf("Dropped = %d, want 42", d)
	}
	l.Close()
	n := 0
	for range l.Events() {
		n++
	}
	if n != 8 {
		t.Errorf("%d events held, want 8", n)
	}
}

func TestListenRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:2801", ":2801", "[::]:2801", "192.0.2.1:2801", "10.0.0.1:80", "example.com:80", "[::ffff:10.0.0.1]:80"} {
		if _, err := alerts.Listen(addr); !errors.Is(err, alerts.ErrNotLoopback) {
			t.Errorf("Listen(%q): %v, want ErrNotLoopback", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:2801", "[::1]:2801", "localhost:2801", "127.0.0.2:0"} {
		if _, err := alerts.Listen(addr); err != nil {
			t.Errorf("Listen(%q): %v", addr, err)
		}
	}
}
