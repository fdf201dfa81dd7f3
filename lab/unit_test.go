package lab

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

func TestHitLogCapsAndCounts(t *testing.T) {
	var buf bytes.Buffer
	l := newHitLog(3, &buf)
	for i := range 5 {
		l.add(evidence.Hit{Endpoint: "callback", Summary: fmt.Sprint(i) + strings.Repeat("s", 300), Data: strings.Repeat("d", 5000)})
	}
	hits := l.all(nil)
	if len(hits) != 3 {
		t.Fatalf("kept %d hits, want 3", len(hits))
	}
	for i, h := range hits {
		if !strings.HasPrefix(h.Summary, fmt.Sprint(i)) {
			t.Errorf("hit %d out of order: %.5q", i, h.Summary)
		}
		if len(h.Summary) != maxSummary || len(h.Data) != maxData {
			t.Errorf("hit %d: summary %d bytes, data %d bytes; want %d and %d", i, len(h.Summary), len(h.Data), maxSummary, maxData)
		}
	}
	if dropped, err := l.stats(); dropped != 2 || err != nil {
		t.Errorf("dropped = %d (%v), want 2", dropped, err)
	}
	// The JSONL log keeps every hit, beyond the in-memory cap.
	lines := 0
	for sc := bufio.NewScanner(&buf); sc.Scan(); lines++ {
		var h evidence.Hit
		if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
			t.Fatalf("line %d: %v", lines, err)
		}
	}
	if lines != 5 {
		t.Errorf("hit log has %d lines, want 5", lines)
	}
	hits[0].Summary = "changed"
	if l.all(nil)[0].Summary == "changed" {
		t.Error("all() returned the log's own slice")
	}
}

func TestDefaultCap(t *testing.T) {
	if l := newHitLog(0, nil); l.max != DefaultMaxHits {
		t.Errorf("max = %d, want %d", l.max, DefaultMaxHits)
	}
}

func TestTextCapping(t *testing.T) {
	tests := []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"short kept", "abc", 5, "abc"},
		{"ascii cut", "abcdef", 3, "abc"},
		{"no split rune", "aé", 2, "a"}, // é is two bytes
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := truncate(tc.in, tc.n); got != tc.want {
				t.Errorf("truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
		})
	}
	if got := printable([]byte{'o', 'k', 0xff, 0x00}); got != "ok\\xff\x00" || !utf8.ValidString(got) {
		t.Errorf("printable = %q", got)
	}
}

func TestRedirectTargetsStayInLab(t *testing.T) {
	tests := []struct {
		url  string
		want bool
	}{
		{"http://169.254.169.254/latest/meta-data/", true},
		{"http://[fd00:ec2::254]/", true},
		{"http://metadata.google.internal/computeMetadata/v1/", true},
		{"https://callback.gatehouse.test:443/x", true},
		{"http://abc.oob.gatehouse.test/", true},
		{"http://2852039166/", true},          // 169.254.169.254 as one number
		{"http://0xa9.0xfe.0xa9.0xfe/", true}, // hex parts
		{"http://0251.0376.0251.0376/", true}, // octal parts
		{"http://169.254.43518/", true},       // last part fills two bytes
		{"http://192.0.2.1/", false},
		{"http://8.8.8.8/", false},
		{"http://example.com/", false},
		{"http://oob.gatehouse.test.evil.example/", false},
		{"file:///etc/passwd", false},
		{"//169.254.169.254/", false},
		{"http://169.254.169.254.1/", false},
		{"http://4294967296/", false},
		{"http://192.88.99.10/c/x", true}, // the public-looking callback
		{"http://[3ffe::10]/c/x", true},
		{"http://192.88.99.11/", false},
	}
	for _, tc := range tests {
		if got := labURL(tc.url, DefaultAddrs()); got != tc.want {
			t.Errorf("labURL(%q) = %v, want %v", tc.url, got, tc.want)
		}
	}
}

func TestBadRoute(t *testing.T) {
	veth := (&Lab{id: "ab12"}).vethRE()
	tests := []struct {
		name string
		r    route
		bad  bool
	}{
		{"local on lo", route{Type: "local", Dst: "203.0.113.10", Dev: "lo", Protocol: "kernel", Table: "local"}, false},
		{"connected veth", route{Dst: "198.51.100.4/30", Dev: "ghab12s1l", Protocol: "kernel"}, false},
		{"unreachable", route{Type: "unreachable", Dst: "10.0.0.0/8", Protocol: "boot"}, false},
		{"default", route{Dst: "default", Dev: "ghab12s1l", Protocol: "boot"}, true},
		{"gateway", route{Dst: "10.0.0.0/8", Gateway: "198.51.100.6", Dev: "ghab12s1l", Protocol: "kernel"}, true},
		{"multipath", route{Dst: "10.0.0.0/8", Nexthops: []any{map[string]any{}}, Protocol: "boot"}, true},
		{"other lab's veth", route{Dst: "198.51.100.4/30", Dev: "ghcd34s1l", Protocol: "kernel"}, true},
		{"host interface", route{Dst: "10.0.0.0/24", Dev: "eth0", Protocol: "kernel"}, true},
		{"static on our veth", route{Dst: "10.0.0.0/8", Dev: "ghab12s1l", Protocol: "boot"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if why := badRoute(tc.r, veth); (why != "") != tc.bad {
				t.Errorf("badRoute = %q, want bad=%v", why, tc.bad)
			}
		})
	}
}

func TestHTTPHitKeepsTheAttemptLabelPlain(t *testing.T) {
	r := httptest.NewRequest("GET", "http://203.0.113.10/c/x", nil)
	r.Header.Set("X-Gatehouse-Attempt", "proxy-rebind<script>\x00"+strings.Repeat("a", 100))
	h := httpHit("callback", r, nil)
	if !strings.HasPrefix(h.Attempt, "proxy-rebindscript") || len(h.Attempt) > 64 || strings.ContainsAny(h.Attempt, "<>\x00") {
		t.Errorf("attempt label %q", h.Attempt)
	}
}
