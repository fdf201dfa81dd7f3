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
	"github.com/gatehouse-dev/gatehouse/internal/lab/model"
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
	// One cap: the JSONL log holds exactly the hits kept in memory. (It
	// once kept writing past the cap: a flood filled the disk.)
	if lines := hitLines(t, &buf); lines != 3 {
		t.Errorf("hit log has %d lines, want the 3 kept in memory", lines)
	}
	hits[0].Summary = "changed"
	if l.all(nil)[0].Summary == "changed" {
		t.Error("all() returned the log's own slice")
	}
}

func hitLines(t *testing.T, buf *bytes.Buffer) int {
	t.Helper()
	lines := 0
	for sc := bufio.NewScanner(buf); sc.Scan(); lines++ {
		var h evidence.Hit
		if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
			t.Fatalf("line %d: %v", lines, err)
		}
	}
	return lines
}

// A flood into a run folder's bounded trace: whichever cap is reached
// first (the trace's, or memory's), memory and file keep the same hits and
// the trace's cut counts every hit dropped, as lab.Dropped does.
func TestHitLogFloodIntoBoundedTrace(t *testing.T) {
	for _, tc := range []struct {
		name     string
		memory   int
		lim      evidence.TraceLimit
		wantKept int
	}{
		{"trace line limit first", 1000, evidence.TraceLimit{Lines: 40}, 40},
		{"trace byte limit first", 1000, evidence.TraceLimit{Bytes: 20 << 10}, -1},
		{"memory first", 25, evidence.TraceLimit{Lines: 1000}, 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			tr := evidence.NewTrace(&buf, tc.lim)
			l := newHitLog(tc.memory, tr)
			const flood = 5000
			for i := range flood {
				l.add(evidence.Hit{Endpoint: "inference", Summary: fmt.Sprintf("GET /%d", i), Data: strings.Repeat("d", 300)})
			}
			kept := len(l.all(nil))
			if tc.wantKept >= 0 && kept != tc.wantKept {
				t.Fatalf("kept %d hits, want %d", kept, tc.wantKept)
			}
			if int64(buf.Len()) > tr.Cut().Bytes {
				t.Fatalf("trace is %d bytes, past %d", buf.Len(), tr.Cut().Bytes)
			}
			if lines := hitLines(t, &buf); lines != kept {
				t.Fatalf("trace has %d lines, memory %d: not one cap", lines, kept)
			}
			dropped, err := l.stats()
			if err != nil || dropped != flood-kept || tr.Cut().DroppedLines != int64(dropped) {
				t.Fatalf("dropped %d (%v), trace cut %+v; want %d in both", dropped, err, tr.Cut(), flood-kept)
			}
		})
	}
}

// The model transcript follows the same rule per session.
func TestTranscriptFloodIntoBoundedTrace(t *testing.T) {
	var buf bytes.Buffer
	tr := evidence.NewTrace(&buf, evidence.TraceLimit{Lines: 30})
	tl := newTranscriptLog(tr)
	for i := range 100 {
		tl.add(model.Record{Session: fmt.Sprint("s", i%2), Path: "/v1/messages", Step: i})
	}
	kept := len(tl.of("s0")) + len(tl.of("s1"))
	if kept != 30 || hitLinesAny(t, &buf) != 30 || tr.Cut().DroppedLines != 70 || tl.dropped != 70 || tl.err() != nil {
		t.Fatalf("kept %d, cut %+v, dropped %d (%v)", kept, tr.Cut(), tl.dropped, tl.err())
	}
}

func hitLinesAny(t *testing.T, buf *bytes.Buffer) int {
	t.Helper()
	return strings.Count(buf.String(), "\n")
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
