package lab_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
)

// A path socket records every connection for its session, answers, is
// usable by another user (mode 0666) and is gone once stopped.
func TestServeSocketRecordsEveryConnection(t *testing.T) {
	l := upLab(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "docker.sock")
	stop, err := l.ServeSocket(ctx, path, lab.EndpointEngineSocket, "s-sock", []byte("HTTP/1.0 200 OK\r\n\r\n{}"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop(context.WithoutCancel(ctx)) })
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o666 {
		t.Fatalf("socket mode: %v %v", st, err)
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, "GET /v1.43/containers/json HTTP/1.0\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	reply, _ := io.ReadAll(c)
	c.Close()
	if !strings.Contains(string(reply), "200 OK") {
		t.Errorf("reply %q", reply)
	}
	h := waitHit(t, l, "s-sock", func(h evidence.Hit) bool { return h.Endpoint == lab.EndpointEngineSocket })
	if h.Proto != "unix" || h.Dst != path || !strings.Contains(h.Data, "containers/json") || !h.Served {
		t.Errorf("hit does not say what arrived: %+v", h)
	}
	// A client that connects and sends nothing has reached it too.
	c2, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c2.Close()
	deadline := time.Now().Add(3 * time.Second)
	for len(l.HitsFor("s-sock")) < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(l.HitsFor("s-sock")); n != 2 {
		t.Errorf("a silent connection was not recorded: %d hits", n)
	}
	if err := stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("socket left after stop: %v", err)
	}
	if err := stop(ctx); err != nil {
		t.Errorf("second stop: %v", err)
	}
	if _, err := net.Dial("unix", path); err == nil {
		t.Error("socket still answers after stop")
	}
}

// The host-side service answers on the lab namespace's own loopback and
// records the request; a session namespace has a loopback of its own and
// never reaches it.
func TestHostServiceOnlyOnTheLabLoopback(t *testing.T) {
	l := upLab(t)
	addr := net.JoinHostPort(lab.HostServiceV4, strconv.Itoa(lab.HostServicePort))
	labNet := lab.Network{NetnsPath: lab.NetnsPath(l.Name())}
	resp, err := client(labNet).Get("http://" + addr + "/probe?c=ghc0123456789abcdef")
	if err != nil {
		t.Fatalf("from the lab namespace: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "host's loopback") {
		t.Errorf("answer %d %q", resp.StatusCode, body)
	}
	found := false
	deadline := time.Now().Add(3 * time.Second)
	for !found && time.Now().Before(deadline) {
		for _, h := range l.Hits() {
			found = found || h.Endpoint == "host-service" && strings.Contains(h.Summary+h.Data, "ghc0123456789abcdef")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !found {
		t.Errorf("the host service did not record the request: %+v", l.Hits())
	}

	nw := attach(t, l, "s-host")
	if c, err := dial(context.Background(), nw, "tcp", addr); err == nil {
		c.Close()
		t.Fatal("a session namespace reached the host-side service")
	}
	for _, h := range l.HitsFor("s-host") {
		if h.Endpoint == "host-service" {
			t.Errorf("host-service hit from a session namespace: %+v", h)
		}
	}
}
