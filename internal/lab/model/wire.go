package model

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// wire is one API's wire format: how a request is read, and how an answer
// and an error are written.
type wire interface {
	name() string
	parse(body []byte) (turn, error)
	answer(w http.ResponseWriter, a answer) error
	errorBody(kind errKind, msg string) any
}

// wires maps each POST path to its format.
var wires = map[string]wire{
	"/v1/messages":              anthropicWire{},
	"/v1/messages/count_tokens": anthropicWire{},
	"/v1/responses":             responsesWire{},
	"/v1/chat/completions":      chatWire{},
}

// MaxBody caps a request body, after decompression.
const MaxBody = 16 << 20

type errKind int

const (
	kindInvalid errKind = iota
	kindAuth
	kindNotFound
	kindTooLarge
	kindMedia
)

// apiError is an error answered in the API's own error shape.
type apiError struct {
	status int
	kind   errKind
	msg    string
}

func errNotFound(msg string) *apiError { return &apiError{http.StatusNotFound, kindNotFound, msg} }

// fail writes e in wf's error shape and returns what the record keeps.
func fail(wf interface{ errorBody(errKind, string) any }, w http.ResponseWriter, e *apiError) (int, string) {
	writeJSON(w, e.status, wf.errorBody(e.kind, e.msg))
	return e.status, e.msg
}

// readBody reads the whole body and undoes its Content-Encoding (Codex may
// send zstd, others gzip), capped at MaxBody either way.
func readBody(r *http.Request) ([]byte, *apiError) {
	tooLarge := &apiError{http.StatusRequestEntityTooLarge, kindTooLarge, fmt.Sprintf("request body over %d bytes", MaxBody)}
	raw, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return raw, &apiError{http.StatusBadRequest, kindInvalid, "reading the body: " + err.Error()}
	}
	if len(raw) > MaxBody {
		return raw[:MaxBody], tooLarge
	}
	var dec io.Reader
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		return raw, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return raw, &apiError{http.StatusBadRequest, kindInvalid, "gzip body: " + err.Error()}
		}
		dec = zr
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(raw), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(MaxBody+1))
		if err != nil {
			return raw, &apiError{http.StatusBadRequest, kindInvalid, "zstd body: " + err.Error()}
		}
		defer zr.Close()
		dec = zr
	default:
		return raw, &apiError{http.StatusUnsupportedMediaType, kindMedia, "unsupported Content-Encoding " + enc + " (identity, gzip and zstd are)"}
	}
	out, err := io.ReadAll(io.LimitReader(dec, MaxBody+1))
	if err != nil {
		return raw, &apiError{http.StatusBadRequest, kindInvalid, "decompressing the body: " + err.Error()}
	}
	if len(out) > MaxBody {
		return out[:MaxBody], tooLarge
	}
	return out, nil
}

// answer is everything an API needs to write a reply, with deterministic
// ids: the same request gets the same bytes back.
type answer struct {
	turn   turn
	reply  reply
	args   json.RawMessage // the tool call's arguments, keys sorted
	callID string          // "call_…" or "toolu_…" for the tool call
	seed   string
	in     int // input tokens, estimated from the body size
	out    int // output tokens, estimated from what is sent
}

func newAnswer(key, api string, t turn, rp reply, bodyLen int) answer {
	kind := rp.Tool
	if kind == "" {
		kind = "text:" + rp.Why
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d\x00%s", key, api, rp.Step, kind)))
	a := answer{turn: t, reply: rp, seed: hex.EncodeToString(sum[:]), in: bodyLen/4 + 1}
	payload := rp.Text
	if rp.Tool != "" {
		a.args = marshal(rp.Args)
		payload = string(a.args)
		a.callID = a.id("toolu_")
		if api != "anthropic" {
			a.callID = a.id("call_")
		}
	}
	a.out = len(payload)/4 + 1
	return a
}

// id derives an id with the given prefix from the answer's seed.
func (a answer) id(prefix string) string {
	sum := sha256.Sum256([]byte(a.seed + prefix))
	return prefix + hex.EncodeToString(sum[:12])
}

func (a answer) model() string {
	if a.turn.Model != "" {
		return a.turn.Model
	}
	return Name
}

// marshal is json.Marshal without HTML escaping, so commands read as sent.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("null") // only maps of strings, numbers and slices reach here
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(marshal(v), '\n'))
}

// textOf reads content that is either a string or a list of parts with a
// "text" field (Anthropic blocks, OpenAI input_text/output_text/text parts),
// joining the parts' text by newlines; other parts (images) are skipped.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var out []string
	for _, p := range parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}
