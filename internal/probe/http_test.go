package probe_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/probe"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// labServer is a loopback stand-in for a controlled endpoint: redirects,
// an IMDSv2-like token flow, and a log of what arrived.
type labServer struct {
	mu   sync.Mutex
	hits []string
}

func (l *labServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	l.hits = append(l.hits, r.Method+" "+r.URL.Path+" canary="+r.Header.Get("X-Canary"))
	l.mu.Unlock()
	switch {
	case r.URL.Path == "/hello":
		fmt.Fprint(w, "hello "+r.Header.Get("X-Canary"))
	case r.URL.Path == "/echo":
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s", r.Method, b)
	case strings.HasPrefix(r.URL.Path, "/hop/"):
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/hop/"))
		if n == 0 {
			fmt.Fprint(w, "arrived")
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusFound)
	case r.URL.Path == "/token" && r.Method == http.MethodPut:
		fmt.Fprint(w, "tok-123\n")
	case r.URL.Path == "/meta":
		if r.Header.Get("X-Token") != "tok-123" || r.Header.Get("X-Extra") != "1" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "secret-role")
	default:
		http.NotFound(w, r)
	}
}

func (l *labServer) Hits() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.hits...)
}

func TestHTTP(t *testing.T) {
	lab := &labServer{}
	srv := httptest.NewServer(lab)
	t.Cleanup(srv.Close)
	tlsSrv := httptest.NewTLSServer(lab)
	t.Cleanup(tlsSrv.Close)
	u := srv.URL
	reps := runPlan(t, 3000,
		wire.Step{ID: "get", Kind: wire.KindHTTP, Target: u + "/hello", Headers: map[string]string{"X-Canary": "c4n"}},
		wire.Step{ID: "post", Kind: wire.KindHTTP, Target: u + "/echo", Method: "POST", Body: "data=1"},
		wire.Step{ID: "tls", Kind: wire.KindHTTP, Target: tlsSrv.URL + "/hello"},
		wire.Step{ID: "nofollow", Kind: wire.KindHTTP, Target: u + "/hop/1"},
		wire.Step{ID: "follow", Kind: wire.KindHTTP, Target: u + "/hop/5", Follow: true},
		wire.Step{ID: "toomany", Kind: wire.KindHTTP, Target: u + "/hop/6", Follow: true},
		wire.Step{ID: "chain", Kind: wire.KindHTTP, Target: u + "/token", Method: "PUT",
			Then: &wire.Chain{Target: u + "/meta", Header: "X-Token", Extra: map[string]string{"X-Extra": "1"}}},
		wire.Step{ID: "chainfail", Kind: wire.KindHTTP, Target: u + "/missing", Method: "PUT",
			Then: &wire.Chain{Target: u + "/meta", Header: "X-Token"}},
		wire.Step{ID: "scheme", Kind: wire.KindHTTP, Target: "file:///etc/passwd"},
	)
	expect(t, reps["get"], wire.OutcomeCompleted, "hello c4n")
	expect(t, reps["post"], wire.OutcomeCompleted, "POST data=1")
	expect(t, reps["tls"], wire.OutcomeCompleted, "hello ")
	expect(t, reps["nofollow"], wire.OutcomeCompleted, "")
	if reps["nofollow"].Status != http.StatusFound {
		t.Errorf("nofollow: status %d, want 302", reps["nofollow"].Status)
	}
	expect(t, reps["follow"], wire.OutcomeCompleted, "arrived")
	if r := reps["toomany"]; r.Status != http.StatusFound || !strings.Contains(r.Error, "after 5 redirects") {
		t.Errorf("toomany: status %d error %q, want 302 and a redirect note", r.Status, r.Error)
	}
	expect(t, reps["chain"], wire.OutcomeCompleted, "secret-role")
	if r := reps["chain"]; r.Status != 200 || r.Bytes != len("tok-123\n")+len("secret-role") {
		t.Errorf("chain: status %d bytes %d", r.Status, r.Bytes)
	}
	if r := reps["chainfail"]; r.Status != 404 || !strings.Contains(r.Error, "not attempted") {
		t.Errorf("chainfail: status %d error %q", r.Status, r.Error)
	}
	expect(t, reps["scheme"], wire.OutcomeError, "")

	hops := 0
	for _, h := range lab.Hits() {
		if strings.HasPrefix(h, "GET /hop/") {
			hops++
		}
		if strings.HasPrefix(h, "GET /meta") && !strings.Contains(strings.Join(lab.Hits(), ","), "PUT /token") {
			t.Errorf("meta fetched without the token request")
		}
	}
	// nofollow 1 request, follow 6 (5 redirects), toomany 6 (stops after 5).
	if hops != 13 {
		t.Errorf("server saw %d hop requests, want 13: %q", hops, lab.Hits())
	}
}

// TestHTTPProxy checks that UseProxy sends the request to the proxy named
// in the environment. The target name is never resolved: the proxy gets it.
func TestHTTPProxy(t *testing.T) {
	lab := &labServer{}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lab.ServeHTTP(w, r)
		if r.URL.Host != "gatehouse.test" {
			t.Errorf("proxy got host %q", r.URL.Host)
		}
	}))
	t.Cleanup(proxy.Close)
	t.Cleanup(probe.GuardHTTPDial())
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("NO_PROXY", "")
	reps := runPlan(t, 3000, wire.Step{ID: "via", Kind: wire.KindHTTP, Target: "http://gatehouse.test/hello", UseProxy: true,
		Headers: map[string]string{"X-Canary": "p"}})
	expect(t, reps["via"], wire.OutcomeCompleted, "hello p")

	// Without UseProxy the same step dials the name itself, which the
	// guard refuses before any lookup: the proxy must see nothing new.
	reps = runPlan(t, 3000, wire.Step{ID: "direct", Kind: wire.KindHTTP, Target: "http://gatehouse.test/hello"})
	if r := reps["direct"]; r.Outcome != wire.OutcomeError || !strings.Contains(r.Error, "test guard") {
		t.Errorf("direct: outcome %q error %q, want the guard's refusal", r.Outcome, r.Error)
	}
	if hits := lab.Hits(); len(hits) != 1 {
		t.Errorf("proxy hits %q, want one", hits)
	}
}
