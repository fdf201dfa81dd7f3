package intake

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Operation names, as records and contracts use them.
const (
	OpRead     = "read-report"
	OpAttach   = "attach-evidence"
	OpSubmit   = "submit-result"
	OpFinalise = "finalise"
)

// Variant selects a deliberately broken service, for proving that the
// intake gate catches each mistake. The zero value is the correct service.
// No profile or lab option reaches these: only code that names one does.
type Variant string

const (
	Correct             Variant = ""
	AcceptsExtraFields  Variant = "accepts-extra-fields"  // stores fields the schema does not know
	AcceptsOtherReport  Variant = "accepts-other-report"  // stores a result for a report the token does not name
	WritesAfterFinalise Variant = "writes-after-finalise" // keeps accepting writes once finalised
	HonoursExpiredToken Variant = "honours-expired-token" // never checks expiry
)

// Variants are the broken variants, in a stable order.
var Variants = []Variant{AcceptsExtraFields, AcceptsOtherReport, WritesAfterFinalise, HonoursExpiredToken}

// DefaultMaxRecords bounds the records kept in memory; drops are counted.
const DefaultMaxRecords = 10_000

const maxRecordBody = 1 << 10 // bytes of a request body kept in a record

// Options configure New. Key is required; zero values of the rest take
// defaults.
type Options struct {
	Key        ed25519.PublicKey // verifies run tokens
	Now        func() time.Time  // default time.Now; expiry is judged by it
	Record     func(Record)      // called for every request, after it is decided; default none
	Broken     Variant           // default Correct
	MaxRecords int               // default DefaultMaxRecords
}

// Service is the reference results-intake service: the receiving
// application a triage agent submits its result to. See doc.go for routes.
type Service struct {
	key    ed25519.PublicKey
	now    func() time.Time
	notify func(Record)
	broken Variant
	store  *Store

	mu      sync.Mutex
	records []Record
	max     int
	dropped int
}

// New makes a service.
func New(o Options) (*Service, error) {
	if len(o.Key) != ed25519.PublicKeySize {
		return nil, errors.New("intake: new: an Ed25519 public key is required")
	}
	switch o.Broken {
	case Correct, AcceptsExtraFields, AcceptsOtherReport, WritesAfterFinalise, HonoursExpiredToken:
	default:
		return nil, fmt.Errorf("intake: new: unknown variant %q", o.Broken)
	}
	s := &Service{key: o.Key, now: o.Now, notify: o.Record, broken: o.Broken, store: newStore(), max: o.MaxRecords}
	if s.now == nil {
		s.now = time.Now
	}
	if s.notify == nil {
		s.notify = func(Record) {}
	}
	if s.max <= 0 {
		s.max = DefaultMaxRecords
	}
	return s, nil
}

// Store is what the service holds, per (tenant, run, report).
func (s *Service) Store() *Store { return s.store }

// Records returns every request kept, in arrival order.
func (s *Service) Records() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Record(nil), s.records...)
}

// Dropped is how many records arrived after the in-memory cap.
func (s *Service) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Record is one request as the service decided it. The token is never
// kept: only its hash and, when it verified, its claims.
type Record struct {
	Time      time.Time `json:"time"`
	Proto     string    `json:"proto"` // http or https
	Src       string    `json:"src"`   // remote address as seen
	Dst       string    `json:"dst"`   // local address it arrived on
	Method    string    `json:"method"`
	Path      string    `json:"path"`
	URI       string    `json:"uri"`                  // the request target as sent (path and query)
	Op        string    `json:"op,omitempty"`         // the operation the route names; "" for no route
	TokenHash string    `json:"token_hash,omitempty"` // TokenHash of the presented token
	Claims    *Claims   `json:"claims,omitempty"`     // the token's claims when its signature verified
	Status    int       `json:"status"`
	Decision  string    `json:"decision"`         // "accepted" or "refused: why"
	Stored    string    `json:"stored,omitempty"` // what the request changed in the store
	BodyBytes int64     `json:"body_bytes"`
	Body      string    `json:"body,omitempty"` // the body's first bytes
}

// Accepted reports whether the request was served.
func (r Record) Accepted() bool { return r.Decision == "accepted" }

func (s *Service) keep(r Record) {
	s.mu.Lock()
	if len(s.records) < s.max {
		s.records = append(s.records, r)
	} else {
		s.dropped++
	}
	s.mu.Unlock()
	s.notify(r)
}

// refusal is a decided refusal: the status and the reason.
type refusal struct {
	status int
	why    string
}

func refuse(status int, format string, a ...any) *refusal {
	return &refusal{status, fmt.Sprintf(format, a...)}
}

// ServeHTTP routes, authorises, applies and records one request.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := Record{Time: s.now().UTC(), Proto: "http", Src: r.RemoteAddr, Method: r.Method, Path: r.URL.Path, URI: r.URL.RequestURI()}
	if r.TLS != nil {
		rec.Proto = "https"
	}
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		rec.Dst = a.String()
	}
	// Both write routes share one bound (MaxResultBody == MaxEvidenceBody).
	body, n, tooBig := readBounded(r.Body, MaxResultBody)
	rec.BodyBytes = n
	rec.Body = excerpt(body)
	reply, ref := s.serve(r, body, tooBig, &rec)
	w.Header().Set("Content-Type", "application/json")
	if ref != nil {
		rec.Status, rec.Decision = ref.status, "refused: "+ref.why
		s.keep(rec)
		w.WriteHeader(ref.status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": ref.why})
		return
	}
	rec.Status, rec.Decision = http.StatusOK, "accepted"
	s.keep(rec)
	_ = json.NewEncoder(w).Encode(reply)
}

func (s *Service) serve(r *http.Request, body []byte, tooBig bool, rec *Record) (any, *refusal) {
	tok, _ := strings.CutPrefix(strings.TrimSpace(r.Header.Get("Authorization")), "Bearer ")
	tok = strings.TrimSpace(tok)
	rec.TokenHash = TokenHash(tok)
	rt, ok := route(r.Method, r.URL.Path)
	if !ok {
		return nil, refuse(http.StatusNotFound, "no such route")
	}
	rec.Op = rt.op
	c, err := verifySig(s.key, tok)
	if err == nil {
		rec.Claims = &c
		if s.broken != HonoursExpiredToken && !s.now().Before(time.Unix(c.Exp, 0)) {
			err = ErrExpired
		}
	}
	if err != nil {
		return nil, refuse(http.StatusUnauthorized, "%s", strings.TrimPrefix(err.Error(), "intake: "))
	}
	if !c.Allows(rt.scope) {
		return nil, refuse(http.StatusForbidden, "token lacks the %s scope", rt.scope)
	}
	if ref := s.bound(rt.sub, c); ref != nil {
		return nil, ref
	}
	if tooBig {
		return nil, refuse(http.StatusRequestEntityTooLarge, "body larger than the route allows")
	}
	switch rt.op {
	case OpRead:
		e, _ := s.store.Get(rt.sub)
		return e, nil
	case OpSubmit:
		return s.submit(rt.sub, c, body, rec)
	case OpAttach:
		return s.attach(rt.sub, r, body, rec)
	default:
		return s.finalise(rt.sub, rec)
	}
}

// bound refuses a subject that is not the token's (the broken variant
// lets another report through).
func (s *Service) bound(sub Subject, c Claims) *refusal {
	switch {
	case sub.Tenant != c.Tenant:
		return refuse(http.StatusForbidden, "tenant %q is not the token's", sub.Tenant)
	case sub.Run != c.Run:
		return refuse(http.StatusForbidden, "run %q is not the token's", sub.Run)
	case sub.Report != c.Report && s.broken != AcceptsOtherReport:
		return refuse(http.StatusForbidden, "report %q is not the token's", sub.Report)
	}
	return nil
}

func (s *Service) submit(sub Subject, c Claims, body []byte, rec *Record) (any, *refusal) {
	res, extra, err := ParseResult(body, s.broken == AcceptsExtraFields)
	if err != nil {
		return nil, refuse(http.StatusBadRequest, "%s", strings.TrimPrefix(err.Error(), "intake: "))
	}
	want := Subject{Run: c.Run, Report: c.Report, Tenant: c.Tenant}
	if s.broken == AcceptsOtherReport {
		want.Report = sub.Report
	}
	if got := (Subject{Run: res.RunID, Report: res.ReportID, Tenant: res.TenantID}); got != want {
		return nil, refuse(http.StatusForbidden, "result names run %q report %q tenant %q, the token %q %q %q",
			got.Run, got.Report, got.Tenant, c.Run, c.Report, c.Tenant)
	}
	var ref *refusal
	var out Entry
	s.store.update(sub, func(e *Entry) bool {
		if e.Finalised && s.broken != WritesAfterFinalise {
			ref = refuse(http.StatusConflict, "finalised: no more writes")
			return false
		}
		e.Result, e.Extra, e.Updated = &res, extra, s.now().UTC()
		e.Writes++
		out = e.clone()
		return true
	})
	if ref != nil {
		return nil, ref
	}
	rec.Stored = fmt.Sprintf("result for tenant=%s run=%s report=%s (%d bytes)", sub.Tenant, sub.Run, sub.Report, len(body))
	if len(extra) > 0 {
		rec.Stored += fmt.Sprintf(" with %d extra field(s)", len(extra))
	}
	return out, nil
}

func (s *Service) attach(sub Subject, r *http.Request, body []byte, rec *Record) (any, *refusal) {
	name := r.URL.Query().Get("name")
	if name == "" || len(name) > MaxEvidenceName || !utf8.ValidString(name) {
		return nil, refuse(http.StatusBadRequest, "attachment needs a name of 1..%d bytes (?name=)", MaxEvidenceName)
	}
	d := sha256.Sum256(body)
	a := Attachment{Name: name, ContentType: truncateText(r.Header.Get("Content-Type"), MaxEvidenceName),
		SHA256: hex.EncodeToString(d[:]), Size: len(body), Time: s.now().UTC()}
	var ref *refusal
	s.store.update(sub, func(e *Entry) bool {
		switch {
		case e.Finalised && s.broken != WritesAfterFinalise:
			ref = refuse(http.StatusConflict, "finalised: no more writes")
		case len(e.Evidence) >= MaxAttachments:
			ref = refuse(http.StatusConflict, "the report holds %d attachments, the most it may", MaxAttachments)
		case e.attachedBytes()+a.Size > MaxAttachmentBytes:
			ref = refuse(http.StatusRequestEntityTooLarge, "the report's attachments would pass %d bytes", MaxAttachmentBytes)
		}
		if ref != nil {
			return false
		}
		e.Evidence = append(e.Evidence, a)
		e.Writes++
		e.Updated = a.Time
		return true
	})
	if ref != nil {
		return nil, ref
	}
	rec.Stored = fmt.Sprintf("evidence %q for tenant=%s run=%s report=%s (%d bytes, sha256 %s)", name, sub.Tenant, sub.Run, sub.Report, a.Size, a.SHA256[:16])
	return a, nil
}

// finalise marks the entry final. Finalising twice is a refused write.
func (s *Service) finalise(sub Subject, rec *Record) (any, *refusal) {
	var ref *refusal
	var out Entry
	s.store.update(sub, func(e *Entry) bool {
		if e.Finalised {
			ref = refuse(http.StatusConflict, "already finalised")
			return false
		}
		e.Finalised, e.Updated = true, s.now().UTC()
		out = e.clone()
		return true
	})
	if ref != nil {
		return nil, ref
	}
	rec.Stored = fmt.Sprintf("finalised tenant=%s run=%s report=%s", sub.Tenant, sub.Run, sub.Report)
	return out, nil
}

// readBounded reads up to limit bytes and says whether there was more
// (counting, not keeping, the rest).
func readBounded(r io.Reader, limit int) ([]byte, int64, bool) {
	if r == nil {
		return nil, 0, false
	}
	b, _ := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	n := int64(len(b))
	if len(b) <= limit {
		return b, n, false
	}
	rest, _ := io.Copy(io.Discard, r)
	return b[:limit], n + rest, true
}

// truncateText keeps at most n bytes of s, as valid UTF-8.
func truncateText(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// excerpt keeps a body's first bytes as text for a record.
func excerpt(b []byte) string {
	if len(b) > maxRecordBody {
		b = b[:maxRecordBody]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
