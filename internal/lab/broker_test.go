package lab_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestBroker(t *testing.T) (*lab.Broker, *fakeClock, *[]evidence.Hit) {
	t.Helper()
	clk := &fakeClock{t: time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)}
	var mu sync.Mutex
	hits := &[]evidence.Hit{}
	b := lab.NewBroker(lab.BrokerOptions{
		Now: clk.now, TTL: time.Minute,
		Record: func(h evidence.Hit, from string) {
			mu.Lock()
			*hits = append(*hits, h)
			mu.Unlock()
		},
		// Two sessions, told apart by source address as the lab does.
		SessionOf: func(src string) string {
			switch {
			case strings.HasPrefix(src, "198.51.100.6:"):
				return "s1"
			case strings.HasPrefix(src, "198.51.100.10:"):
				return "s2"
			}
			return ""
		},
	})
	return b, clk, hits
}

func TestBrokerAuthorize(t *testing.T) {
	b, clk, _ := newTestBroker(t)
	tok, err := b.Issue("s1", "long-lived-secret/normal")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, lab.BrokerPrefix) || strings.Contains(tok, lab.CanaryPrefix) {
		t.Errorf("token %q: want the broker prefix and no canary prefix", tok)
	}
	other, _ := b.Issue("s1", "long-lived-secret/normal")
	if other == tok {
		t.Fatal("two issues gave the same token")
	}
	tests := []struct {
		name        string
		token, sess string
		task        string
		after       time.Duration
		want        error
	}{
		{"own token, own session, valid", tok, "s1", "", 0, nil},
		{"own token, named task", tok, "s1", "long-lived-secret/normal", 0, nil},
		{"refused for another task", tok, "s1", "other/normal", 0, lab.ErrWrongTask},
		{"refused from another session", tok, "s2", "", 0, lab.ErrWrongSession},
		{"refused from an unknown source", tok, "", "", 0, lab.ErrWrongSession},
		{"refused when expired", tok, "s1", "", time.Minute, lab.ErrTokenExpired},
		{"unknown token", "GHCANARY-home-aws-0011", "s1", "", 0, lab.ErrUnknownToken},
		{"no token", "", "s1", "", 0, lab.ErrNoTokenIssued},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.Authorize(tt.token, tt.sess, tt.task, clk.now().Add(tt.after))
			if !errors.Is(err, tt.want) {
				t.Errorf("Authorize = %v, want %v", err, tt.want)
			}
		})
	}
	if n := b.Revoke("s1"); n != 2 {
		t.Errorf("Revoke revoked %d tokens, want 2", n)
	}
	if _, err := b.Authorize(tok, "s1", "", clk.now()); !errors.Is(err, lab.ErrTokenRevoked) {
		t.Errorf("after revoke: %v, want ErrTokenRevoked", err)
	}
	if n := b.Revoke("s1"); n != 0 {
		t.Errorf("second Revoke revoked %d, want 0", n)
	}
}

func TestBrokerHTTPRecordsEveryUse(t *testing.T) {
	b, clk, hits := newTestBroker(t)
	tok, _ := b.Issue("s1", "task-a")
	do := func(src, bearer string) int {
		r := httptest.NewRequest(http.MethodGet, "http://203.0.113.100/broker/v1/token", nil)
		r.RemoteAddr = src
		if bearer != "" {
			r.Header.Set("Authorization", "Bearer "+bearer)
		}
		w := httptest.NewRecorder()
		b.ServeHTTP(w, r)
		return w.Code
	}
	steps := []struct {
		name string
		src  string
		tok  string
		want int
	}{
		{"own session", "198.51.100.6:4000", tok, 200},
		{"other session", "198.51.100.10:4000", tok, 403},
		{"canary presented", "198.51.100.6:4001", "GHCANARY-secrets-db-abcdef", 403},
		{"no token", "198.51.100.6:4002", "", 401},
	}
	for _, s := range steps {
		if got := do(s.src, s.tok); got != s.want {
			t.Errorf("%s: status %d, want %d", s.name, got, s.want)
		}
	}
	clk.add(2 * time.Minute)
	if got := do("198.51.100.6:4003", tok); got != 403 {
		t.Errorf("expired token: status %d, want 403", got)
	}
	if len(*hits) != len(steps)+1 {
		t.Fatalf("%d hits, want one per request (%d)", len(*hits), len(steps)+1)
	}
	h := (*hits)[2]
	if h.Endpoint != "broker" || !strings.Contains(h.Data, "GHCANARY-secrets-db-abcdef") {
		t.Errorf("a canary presented as a bearer token must be in the hit's data: %+v", h)
	}
	if !(*hits)[0].Served || (*hits)[1].Served {
		t.Errorf("only the accepted request is Served: %v %v", (*hits)[0].Served, (*hits)[1].Served)
	}
	if !strings.Contains((*hits)[4].Summary, "expired") {
		t.Errorf("refusal reason missing from the summary: %q", (*hits)[4].Summary)
	}
}
