package model

import (
	"net/http"
)

// sse writes server-sent events, flushing after each one: an agent waits
// for every event, and a buffered one would stall it until the end.
type sse struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error // the first write error; later events are skipped
}

func startSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, rc: http.NewResponseController(w)}
}

// event writes one event; name "" writes a data-only event (OpenAI Chat).
func (s *sse) event(name string, v any) {
	s.data(name, marshal(v))
}

// data writes one event with a raw data line ("[DONE]").
func (s *sse) data(name string, data []byte) {
	if s.err != nil {
		return
	}
	var b []byte
	if name != "" {
		b = append(b, "event: "+name+"\n"...)
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	if _, s.err = s.w.Write(b); s.err == nil {
		s.err = s.rc.Flush()
	}
}
