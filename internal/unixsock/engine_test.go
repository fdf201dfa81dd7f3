package unixsock_test

import (
	"context"
	"encoding/binary"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/gatehouse-dev/gatehouse/internal/unixsock"
)

// serveUnix serves h on a unix socket in a test folder, over HTTP/1 or
// (h2c) HTTP/2, and returns its path.
func serveUnix(t *testing.T, h http.Handler, h2 bool) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "engine.sock")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	if !h2 {
		srv := &http.Server{Handler: h}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		return p
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go (&http2.Server{}).ServeConn(c, &http2.ServeConnOpts{Handler: h})
		}
	}()
	return p
}

// dockerd answers the way dockerd 20.10 does, and records what it was asked.
type dockerd struct {
	mu   sync.Mutex
	asks []string
	hdr  map[string]string
}

func (d *dockerd) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	d.asks = append(d.asks, r.Method+" "+r.URL.Path)
	d.mu.Unlock()
	for k, v := range d.hdr {
		w.Header().Set(k, v)
	}
	switch r.URL.Path {
	case "/_ping":
		w.Write([]byte("OK"))
	case "/version":
		w.Write([]byte(`{"Version":"20.10.24","ApiVersion":"1.41","Os":"linux"}`))
	default:
		http.NotFound(w, r)
	}
}

// grpcServer answers one method with a message of string fields.
func grpcServer(method string, fields map[int]string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "Grpc-Status")
		if r.URL.Path != method || r.Header.Get("Content-Type") != "application/grpc" {
			w.Header().Set("Grpc-Status", "12") // unimplemented
			return
		}
		var msg []byte
		for n := 1; n <= 4; n++ {
			if v, ok := fields[n]; ok {
				msg = append(msg, byte(n<<3|2), byte(len(v)))
				msg = append(msg, v...)
			}
		}
		frame := make([]byte, 5, 5+len(msg))
		binary.BigEndian.PutUint32(frame[1:], uint32(len(msg)))
		w.Write(append(frame, msg...))
		w.Header().Set("Grpc-Status", "0")
	})
}

func TestAskEngineRecognisesEnginesByProtocol(t *testing.T) {
	docker := &dockerd{hdr: map[string]string{"Api-Version": "1.41", "Docker-Experimental": "false", "Server": "Docker/20.10.24 (linux)"}}
	tests := []struct {
		name    string
		handler http.Handler
		h2      bool
		typ     string
		detail  string
	}{
		{"dockerd", docker, false, unixsock.EngineDocker, "version=20.10.24,api=1.41"},
		{"podman", &dockerd{hdr: map[string]string{"Api-Version": "1.41", "Libpod-Api-Version": "4.3.1"}}, false, unixsock.EnginePodman, "version=20.10.24,api=1.41"},
		{"an engine that answers JSON to anything", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Write([]byte(`{"Version":"gatehouse-fake-engine","ApiVersion":"1.41"}`))
		}), false, unixsock.EngineDocker, "version=gatehouse-fake-engine,api=1.41"},
		{"another HTTP service", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("hello")) }), false, "", ""},
		{"containerd", grpcServer("/containerd.services.version.v1.Version/Version", map[int]string{1: "1.6.20", 2: "abc123"}), true, unixsock.EngineContainerd, "version=1.6.20,revision=abc123"},
		{"cri-o", grpcServer("/runtime.v1.RuntimeService/Version", map[int]string{1: "0.1.0", 2: "cri-o", 3: "1.28.1", 4: "v1"}), true, unixsock.EngineCRI, "runtime=cri-o,version=1.28.1,api=v1"},
		{"some other gRPC server", grpcServer("/other.Service/Call", nil), true, unixsock.EngineGRPC, "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := serveUnix(t, tt.handler, tt.h2)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ans, _ := unixsock.AskEngine(ctx, p)
			if ans.Type != tt.typ || (tt.typ != "" && ans.Detail != tt.detail) {
				t.Errorf("AskEngine = %+v, want type %q detail %q", ans, tt.typ, tt.detail)
			}
			if ans.Engine() != (tt.typ != "" && tt.typ != unixsock.EngineGRPC) {
				t.Errorf("Engine() = %v for %q", ans.Engine(), ans.Type)
			}
		})
	}
	// Nothing that changes an engine was asked: only reads.
	docker.mu.Lock()
	defer docker.mu.Unlock()
	if got := strings.Join(docker.asks, ", "); got != "GET /_ping, GET /version" {
		t.Errorf("dockerd was asked %s, want only GET /_ping and GET /version", got)
	}
}

// A socket that is not a server, or closes at once, is not an engine.
func TestAskEngineOnNonEngines(t *testing.T) {
	dir := t.TempDir()
	closer, err := net.Listen("unix", filepath.Join(dir, "closer.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	go func() {
		for {
			c, err := closer.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	silent, err := net.Listen("unix", filepath.Join(dir, "silent.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	var asked atomic.Int32
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			asked.Add(1)
			defer c.Close() // holds it open and says nothing, like an ssh-agent
		}
	}()
	for _, p := range []string{filepath.Join(dir, "closer.sock"), filepath.Join(dir, "none.sock"), filepath.Join(dir, "silent.sock")} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		ans, _ := unixsock.AskEngine(ctx, p)
		cancel()
		if ans.Type != "" {
			t.Errorf("%s: %+v, want no engine", filepath.Base(p), ans)
		}
	}
	// A silent socket is asked one question, not one per protocol (each
	// of which would cost a timeout).
	if n := asked.Load(); n != 1 {
		t.Errorf("the silent socket was asked %d times, want once", n)
	}
}

// A starved dockerd is silent for longer than the probe's one second: the
// probe must say "silent", not "no engine", and the harness, asking with
// more time (WithAskTimeout), must see the engine (issue 22, C2).
func TestSlowEngineIsSilentNotAbsent(t *testing.T) {
	d := &dockerd{hdr: map[string]string{"Api-Version": "1.41"}}
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(1500 * time.Millisecond)
		d.ServeHTTP(w, r)
	})
	p := serveUnix(t, slow, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ans, _ := unixsock.AskEngine(ctx, p)
	if ans.Type != "" || !ans.Silent {
		t.Errorf("asked with one second: %+v, want silent and no type", ans)
	}
	ans, err := unixsock.AskEngine(unixsock.WithAskTimeout(ctx, 3*time.Second), p)
	if !ans.Engine() || ans.Type != unixsock.EngineDocker || ans.Silent {
		t.Errorf("asked with three seconds: %+v (%v), want docker", ans, err)
	}
	// A socket that refuses is not silent.
	none, _ := unixsock.AskEngine(ctx, filepath.Join(t.TempDir(), "none.sock"))
	if none.Silent {
		t.Errorf("a socket that is not there: %+v, want not silent", none)
	}
}
