package probe_test

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

func tok(tag string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "gh" + tag + hex.EncodeToString(b)
}

// runParallel runs steps at once (Parallel 0 means all), as the session
// gates' plans do, with their longer deadline.
func runParallel(t *testing.T, steps ...wire.Step) map[string]wire.Report {
	t.Helper()
	return runPlan(t, 5000, steps...)
}

func freePort(t *testing.T, network string) string {
	t.Helper()
	if network == "udp" {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		return strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// Each channel carries a value from a sender to a receiver, and the
// receiver reports the other's value but never its own. Loopback and temp
// folders only.
func TestSendAndReceiveOnEveryLocalChannel(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"files", "unix"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o777); err != nil {
			t.Fatal(err)
		}
	}
	channels := map[string]string{
		"dir":      "dir:" + filepath.Join(dir, "files"),
		"unix":     "unix:" + filepath.Join(dir, "unix"),
		"abstract": "abstract:gatehouse-test-" + tok(""),
		"tcp":      "tcp:127.0.0.1:" + freePort(t, "tcp"),
		"udp":      "udp:127.0.0.1:" + freePort(t, "udp"),
	}
	theirs, mine := tok("xa"), tok("xb")
	var steps []wire.Step
	for name, ch := range channels {
		steps = append(steps,
			wire.Step{ID: "send-" + name, Kind: wire.KindSend, Target: ch, Payload: theirs, DurationMS: 1500},
			wire.Step{ID: "recv-" + name, Kind: wire.KindReceive, Target: ch, Payload: mine, DurationMS: 1500})
	}
	// The receiver's own value on a shared folder is not a crossing.
	steps = append(steps, wire.Step{ID: "send-own", Kind: wire.KindSend, Target: channels["dir"], Payload: mine, DurationMS: 1500})
	reps := runParallel(t, steps...)
	for name := range channels {
		s, r := reps["send-"+name], reps["recv-"+name]
		if s.Outcome != wire.OutcomeCompleted || s.Bytes == 0 {
			t.Errorf("%s: send %s (%s), %d offers", name, s.Outcome, s.Error, s.Bytes)
		}
		if r.Outcome != wire.OutcomeCompleted || !strings.Contains(r.Excerpt, theirs) {
			t.Errorf("%s: receive %s (%s) did not report the sent value: %q", name, r.Outcome, r.Error, r.Excerpt)
		}
		if strings.Contains(r.Excerpt, mine) {
			t.Errorf("%s: the receiver reported its own value: %q", name, r.Excerpt)
		}
	}
}

// A UDP send is "completed" when the datagram left, whether or not anyone
// heard it: the probe cannot know. The harness therefore never reads
// "completed" as "arrived" (docs/verdicts.md).
func TestUDPSendCompletesWithNoListener(t *testing.T) {
	reps := runParallel(t, wire.Step{ID: "udp", Kind: wire.KindSend, Target: "udp:127.0.0.1:" + freePort(t, "udp"), Payload: tok("xa"), DurationMS: 300})
	if r := reps["udp"]; r.Outcome != wire.OutcomeCompleted {
		t.Errorf("udp send to nobody: %s (%s)", r.Outcome, r.Error)
	}
}

// find reports every token with the file it was in, however deep; a
// missing folder is a complete search of nothing, not an error.
func TestFindReportsTokensWithTheirPaths(t *testing.T) {
	root := t.TempDir()
	near, deep := tok("c"), tok("c")
	write := func(rel, data string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("s2/nonce", "GATEHOUSE STORAGE NONCE "+near+"\n")
	write("a/b/c/d/e/f/nonce", deep)
	write("s2/other", "no token here")
	reps := runParallel(t,
		wire.Step{ID: "root", Kind: wire.KindFind, Target: root},
		wire.Step{ID: "glob", Kind: wire.KindFind, Target: filepath.Join(root, "s*")},
		wire.Step{ID: "missing", Kind: wire.KindFind, Target: filepath.Join(root, "nope")})
	want := near + " " + filepath.Join(root, "s2", "nonce")
	for _, id := range []string{"root", "glob"} {
		if r := reps[id]; r.Outcome != wire.OutcomeCompleted || !strings.Contains(r.Excerpt, want) {
			t.Errorf("%s: %s (%s), excerpt %q lacks %q", id, r.Outcome, r.Error, r.Excerpt, want)
		}
	}
	if !strings.Contains(reps["root"].Excerpt, deep+" "+filepath.Join(root, "a/b/c/d/e/f/nonce")) {
		t.Errorf("find cut the deep folder: %q", reps["root"].Excerpt)
	}
	if r := reps["missing"]; r.Outcome != wire.OutcomeCompleted || r.Excerpt != "" || !strings.HasPrefix(r.Error, "nothing to search") {
		t.Errorf("find of a missing folder: %+v, want completed with nothing found", r)
	}
}

// A heartbeat posts every HeartbeatEvery until its duration ends, naming
// who sent it. (Without Escape: the child would be this test binary.)
func TestHeartbeatPostsUntilItsDurationEnds(t *testing.T) {
	// doHeartbeat ignores SIGTERM/SIGINT/SIGHUP in the process it runs in.
	t.Cleanup(func() { signal.Reset(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP) })
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.RawQuery)
		mu.Unlock()
	}))
	defer srv.Close()
	hb := tok("c")
	reps := runParallel(t, wire.Step{ID: "heartbeat", Kind: wire.KindHeartbeat, Target: srv.URL + "/v1/complete?hb=" + hb, DurationMS: 550})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 3 || len(seen) > 8 {
		t.Fatalf("%d heartbeats in 550 ms at %v each: %q", len(seen), wire.HeartbeatEvery, seen)
	}
	for i, s := range seen {
		if want := "POST hb=" + hb + "&who=main&n=" + strconv.Itoa(i+1); s != want {
			t.Errorf("heartbeat %d: %q, want %q", i, s, want)
		}
	}
	if r := reps["heartbeat"]; r.Bytes != len(seen) {
		t.Errorf("report counts %d heartbeats, the server saw %d", r.Bytes, len(seen))
	}
}
