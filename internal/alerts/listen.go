package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/detect"
)

// DefaultMaxBody bounds one POST; an alert is a few kilobytes.
const DefaultMaxBody = 256 << 10

// ErrNotLoopback refuses an address other than a loopback one: the
// receiver runs on the host and must not be reachable from elsewhere.
var ErrNotLoopback = errors.New("alerts: listen address must be loopback (127.0.0.0/8 or ::1)")

// Listener is a detect.Source receiving alerts over HTTP on a loopback
// address: Falco http_output, falcosidekick's webhook (plain JSON) and its
// CloudEvents output (binary or structured mode, or a batch), and OCSF
// findings. The format is told by headers first (ce-type; content type
// application/cloudevents+json), then by shape (class_uid: OCSF; rule or
// output_fields: Falco). Every body is kept as Raw: a body no parser takes
// becomes an Event of Rule RuleUnparsed (and a 400), so nothing sent is
// lost without a trace, short of a full queue (Dropped) or an oversized
// body (413, Rejected).
type Listener struct {
	addr string
	// MaxBody bounds one request body (DefaultMaxBody when zero); Queue
	// bounds the events held for a slow reader (DefaultQueue when zero).
	// Set them before Start.
	MaxBody int64
	Queue   int

	q        *queue
	srv      *http.Server
	ln       net.Listener
	done     chan struct{}
	once     sync.Once
	rejected uint64
	mu       sync.Mutex
}

var _ detect.Source = (*Listener)(nil)

// Listen returns a receiver for addr ("127.0.0.1:2801", "[::1]:0",
// "localhost:2801"); it binds on Start. Any address that is not loopback
// is refused.
func Listen(addr string) (*Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("alerts: listen %q: %w", addr, err)
	}
	if host == "localhost" {
		host = "127.0.0.1" // no resolver involved: localhost means IPv4 loopback here
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.Unmap().IsLoopback() {
		return nil, fmt.Errorf("%w: %q", ErrNotLoopback, addr)
	}
	return &Listener{addr: net.JoinHostPort(ip.Unmap().String(), port), q: newQueue(0), done: make(chan struct{})}, nil
}

func (l *Listener) Name() string { return "listen:" + l.addr }

// Addr is the bound address (after Start; useful with port 0).
func (l *Listener) Addr() string {
	if l.ln == nil {
		return l.addr
	}
	return l.ln.Addr().String()
}

func (l *Listener) Events() <-chan detect.Event { return l.q.ch }
func (l *Listener) Dropped() uint64             { return l.q.dropped.Load() }

// Malformed counts bodies no parser took (kept as RuleUnparsed events).
func (l *Listener) Malformed() uint64 { return l.q.malformed.Load() }

// Rejected counts requests refused before parsing (too large, not POST).
func (l *Listener) Rejected() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rejected
}

// Start binds and serves until ctx ends or Close.
func (l *Listener) Start(ctx context.Context) error {
	if l.Queue > 0 && l.Queue != cap(l.q.ch) {
		l.q = newQueue(l.Queue)
	}
	if l.MaxBody <= 0 {
		l.MaxBody = DefaultMaxBody
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", l.addr)
	if err != nil {
		return fmt.Errorf("alerts: listen: %w", err)
	}
	l.ln = ln
	l.srv = &http.Server{
		Handler:           http.HandlerFunc(l.serve),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	go func() {
		defer close(l.done)
		defer close(l.q.ch)
		_ = l.srv.Serve(ln) // returns on Shutdown/Close; handlers have finished then
	}()
	go func() {
		select {
		case <-ctx.Done():
			l.Close()
		case <-l.done:
		}
	}()
	return nil
}

// Close stops accepting, waits for requests in flight (briefly) and closes Events.
func (l *Listener) Close() error {
	l.once.Do(func() {
		if l.srv == nil {
			return
		}
		// Close has no caller context (io.Closer): a fixed grace bounds the wait.
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := l.srv.Shutdown(sctx); err != nil {
			l.srv.Close()
		}
		<-l.done
	})
	return nil
}

func (l *Listener) reject(w http.ResponseWriter, code int) {
	l.mu.Lock()
	l.rejected++
	l.mu.Unlock()
	http.Error(w, http.StatusText(code), code)
}

func (l *Listener) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		l.reject(w, http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, l.MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			l.reject(w, http.StatusRequestEntityTooLarge)
			return
		}
		l.reject(w, http.StatusBadRequest)
		return
	}
	received := time.Now()
	es, err := Classify(r.Header, body, received)
	if err != nil {
		l.q.malformed.Add(1)
		l.q.put(unparsed("http", body, received, false))
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, e := range es {
		l.q.put(e)
	}
	w.WriteHeader(http.StatusOK)
}

// ceFalcoType is the CloudEvents type falcosidekick gives Falco alerts.
const ceFalcoType = "falco.rule.output.v1"

type ceStructured struct {
	SpecVersion string          `json:"specversion"`
	Type        string          `json:"type"`
	Data        json.RawMessage `json:"data"`
	DataBase64  []byte          `json:"data_base64"`
}

// Classify tells a POST's format by its headers and shape and parses it.
// A body in one event's envelope (CloudEvents structured) keeps the whole
// body as Raw. A well-formed body of no known shape is one Event of Kind
// "" (Source "http"), not an error.
func Classify(h http.Header, body []byte, received time.Time) ([]detect.Event, error) {
	if t := h.Get("Ce-Type"); t != "" { // CloudEvents binary mode: the body is the data
		return byShape(t, body, received)
	}
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	switch mt {
	case "application/cloudevents+json":
		return structured(body, body, received)
	case "application/cloudevents-batch+json":
		var items []json.RawMessage
		if err := json.Unmarshal(body, &items); err != nil {
			return nil, malformed("cloudevents", "batch", err)
		}
		var out []detect.Event
		for _, it := range items {
			es, err := structured(it, it, received)
			if err != nil {
				return nil, err
			}
			out = append(out, es...)
		}
		return out, nil
	}
	return byShape("", body, received)
}

func structured(body, raw []byte, received time.Time) ([]detect.Event, error) {
	var ce ceStructured
	if err := decodeObject(body, &ce); err != nil {
		return nil, malformed("cloudevents", "structured", err)
	}
	data := []byte(ce.Data)
	if len(ce.DataBase64) > 0 {
		data = ce.DataBase64
	}
	es, err := byShape(ce.Type, data, received)
	if err != nil {
		return nil, err
	}
	if len(es) == 1 {
		es[0].Raw = raw
	}
	return es, nil
}

// byShape parses data given a CloudEvents type (or "") and its JSON shape.
func byShape(ceType string, data []byte, received time.Time) ([]detect.Event, error) {
	if ceType == ceFalcoType {
		return ParseFalco(data, received)
	}
	t := bytes.TrimSpace(data)
	if len(t) > 0 && t[0] == '[' {
		return ParseOCSF(data, received)
	}
	var shape map[string]json.RawMessage
	if err := decodeObject(data, &shape); err != nil {
		return nil, malformed("http", "body", err)
	}
	switch {
	case shape["class_uid"] != nil:
		return ParseOCSF(data, received)
	case shape["rule"] != nil || shape["output_fields"] != nil:
		return ParseFalco(data, received)
	}
	rule := ceType
	if rule == "" {
		rule = "(unrecognised)"
	}
	return []detect.Event{{Source: "http", Rule: strings.TrimSpace(rule), Received: received, Raw: data}}, nil
}
