package lab

import (
	"context"
	"fmt"
	"net/http"
)

// HostServicePort is where the host-side service listens on the lab
// namespace's own 127.0.0.1. In the lab, "the host's loopback" is the lab
// namespace's loopback: only a session that shares the lab's network (a
// `network: host` profile) can reach it; a session namespace has a loopback
// of its own.
const (
	HostServiceV4   = "127.0.0.1"
	HostServicePort = 8089
)

// startHostService starts the service on the lab's loopback. Any request is
// a hit "host-service": nothing a sandbox should ever be able to reach.
func (l *Lab) startHostService(ctx context.Context) error {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hit := httpHit("host-service", r, readBody(r))
		hit.Served = true
		l.record(hit, hit.Src)
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintln(w, "gatehouse host-side service: you reached the host's loopback")
	})
	if err := l.serveHTTP(ctx, hostPort(HostServiceV4, HostServicePort), h, nil); err != nil {
		return fmt.Errorf("host service: %w", err)
	}
	return nil
}
