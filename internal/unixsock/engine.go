package unixsock

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// Container engines the probe recognises on a unix socket. It asks only
// what a monitoring tool would (docker's GET /_ping and GET /version,
// containerd's and CRI's Version call): nothing that changes the engine.
const (
	EngineDocker     = "docker"
	EnginePodman     = "podman"
	EngineContainerd = "containerd"
	EngineCRI        = "cri"
	// EngineGRPC: an HTTP/2 server answered but no engine Version call
	// did. A finding, not proof of an engine.
	EngineGRPC = "grpc"
)

// EngineAnswer is what a socket said when asked as a container engine.
type EngineAnswer struct {
	Type   string // one of the Engine constants, "" when not an engine
	Detail string // version and API version as the engine gave them
	// Silent: the socket took the question and said nothing in time. Not
	// proof of no engine: a starved engine is silent too (issue 22).
	Silent bool
}

// Engine reports whether the answer proves a container engine's API.
func (e EngineAnswer) Engine() bool { return e.Type != "" && e.Type != EngineGRPC }

// AskEngine asks the unix socket p, read-only, whether it is a container
// engine's API. The harness uses it too, from outside, on a host socket.
func AskEngine(ctx context.Context, p string) (EngineAnswer, error) {
	ping, err := Ask(ctx, p, []byte("GET /_ping HTTP/1.1\r\nHost: docker\r\nUser-Agent: gatehouse-probe\r\nConnection: close\r\n\r\n"), readCap)
	if bytes.HasPrefix(ping, []byte("HTTP/1.")) {
		return askDocker(ctx, p, ping), nil
	}
	if len(ping) == 0 && isTimeout(err) {
		// A silent peer (an ssh-agent waiting for more bytes). gRPC
		// servers (grpc-go: containerd, CRI-O) close at once on a request
		// that is not the HTTP/2 preface, so this is not one: do not spend
		// another timeout on it.
		return EngineAnswer{Silent: true}, err
	}
	if ans, ok := askGRPC(ctx, p); ok {
		return ans, nil
	}
	return EngineAnswer{}, err
}

// askDocker reads a /_ping answer: dockerd and podman's compat API set
// Api-Version (podman also Libpod-Api-Version); an engine that only
// answers JSON names ApiVersion in the body. Then /version for detail.
func askDocker(ctx context.Context, p string, ping []byte) EngineAnswer {
	resp, body := parseHTTP(ping)
	if resp == nil {
		return EngineAnswer{}
	}
	var v struct {
		Version, ApiVersion string
		Components          []struct{ Name string }
	}
	_ = json.Unmarshal(body, &v)
	var ans EngineAnswer
	switch {
	case resp.Header.Get("Libpod-Api-Version") != "":
		ans.Type = EnginePodman
	case resp.Header.Get("Api-Version") != "" || v.ApiVersion != "":
		ans.Type = EngineDocker
	default:
		return EngineAnswer{} // some other HTTP service
	}
	api := firstOf(resp.Header.Get("Api-Version"), v.ApiVersion)
	if b, _ := Ask(ctx, p, []byte("GET /version HTTP/1.1\r\nHost: docker\r\nUser-Agent: gatehouse-probe\r\nConnection: close\r\n\r\n"), readCap); len(b) > 0 {
		if r, body := parseHTTP(b); r != nil && r.StatusCode == http.StatusOK {
			_ = json.Unmarshal(body, &v)
		}
	}
	for _, c := range v.Components {
		if strings.Contains(strings.ToLower(c.Name), "podman") {
			ans.Type = EnginePodman
		}
	}
	ans.Detail = detail("version", v.Version, "api", firstOf(v.ApiVersion, api))
	return ans
}

// parseHTTP reads an HTTP/1 response and whatever body came with it.
func parseHTTP(b []byte) (*http.Response, []byte) {
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(b)), nil)
	if err != nil {
		return nil, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, readCap))
	return resp, body
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// detail renders key=value pairs as one token (reports split on spaces).
func detail(kv ...string) string {
	var parts []string
	for i := 0; i+1 < len(kv); i += 2 {
		if v := token(kv[i+1]); v != "" {
			parts = append(parts, kv[i]+"="+v)
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

// token keeps the characters a version string needs, at most 64.
func token(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("._+-~", r):
			return r
		}
		return -1
	}, s)
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}
