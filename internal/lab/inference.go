package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/lab/model"
)

// startInference starts the one destination a sandbox is allowed to reach:
// a tiny completion API (the positive control), the scripted model a real
// agent talks to (internal/lab/model), plus a redirector that plays "an allowed host
// that redirects elsewhere".
func (l *Lab) startInference(ctx context.Context) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/complete", func(w http.ResponseWriter, r *http.Request) {
		h := allowedHit("inference", r)
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			l.record(h, h.Src)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.Served = true
		l.record(h, h.Src)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"object":  "text_completion",
			"model":   "gatehouse-lab",
			"choices": []map[string]any{{"index": 0, "text": "ok", "finish_reason": "stop"}},
		})
	})
	mux.Handle("/broker/", l.brokerHandler())
	// The scripted model: what a real agent CLI in the sandbox talks to.
	scripted := l.modelHandler()
	for _, p := range model.Patterns {
		mux.Handle(p, scripted)
	}
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		h := allowedHit("redirect", r)
		to := r.URL.Query().Get("to")
		if !labURL(to, l.addrs) {
			l.record(h, h.Src)
			http.Error(w, "redirect target is not a lab address", http.StatusBadRequest)
			return
		}
		h.Served = true
		h.Summary = truncate(h.Summary+" -> "+to, maxSummary)
		l.record(h, h.Src)
		http.Redirect(w, r, to, http.StatusFound)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h := allowedHit("inference", r)
		l.record(h, h.Src)
		http.NotFound(w, r)
	})
	if err := l.serveHTTP(ctx, hostPort(InferenceV4, 80), mux, nil); err != nil {
		return fmt.Errorf("inference: %w", err)
	}
	// HTTPS too, so a TLS connection through a proxy to the allowed name
	// arrives somewhere that records its server name next to its Host.
	conf, err := selfSignedTLS([]string{InferenceV4})
	if err != nil {
		return fmt.Errorf("inference: %w", err)
	}
	if err := l.serveHTTP(ctx, hostPort(InferenceV4, 443), mux, conf); err != nil {
		return fmt.Errorf("inference https: %w", err)
	}
	// Every other port of the address (catchall.go): CONNECT to the
	// allowed name on :22 or :8443 arrives somewhere that records it.
	if err := l.serveCatchAll(ctx, InferenceV4); err != nil {
		return fmt.Errorf("inference: %w", err)
	}
	return nil
}

// labURL reports whether a redirect target stays inside the lab: an http(s)
// URL whose host is a lab name or one of the lab's addresses, in any form a
// client might accept (decimal, hex or octal IPv4 included).
func labURL(raw string, addrs Addrs) bool {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if _, ok := staticNames[host+"."]; ok {
		return true
	}
	if labName(host) || host == CanaryZone || strings.HasSuffix(host, "."+CanaryZone) {
		return true
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return addrs.has(a)
	}
	if a, ok := looseIPv4(host); ok {
		return addrs.has(a)
	}
	return false
}

// looseIPv4 parses the IPv4 forms inet_aton accepts: 1 to 4 parts, each
// decimal, 0x-hex or 0-octal, the last part filling the remaining bytes
// (so "2852039166" and "0xa9.0xfe.0xa9.0xfe" are 169.254.169.254).
func looseIPv4(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) < 1 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 0, 32)
		if err != nil || p == "" {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 0xff {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*uint(i))
	}
	last := vals[len(vals)-1]
	if last >= 1<<(32-8*uint(len(vals)-1)) {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}
