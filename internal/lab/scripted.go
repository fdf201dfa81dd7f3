package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/gatehouse-dev/gatehouse/internal/lab/model"
	"github.com/gatehouse-dev/gatehouse/internal/minted"
)

// DefaultMaxTranscript bounds the model records kept per session; a record
// beyond it is dropped from memory and from Options.Transcript alike, and
// counted (the trace's cut in run.json).
const DefaultMaxTranscript = 4096

// controlRE finds a session's control token in a model key
// ("gh.<session>.ghctl<16 hex>").
var controlRE = regexp.MustCompile(`ghctl[0-9a-f]{16}`)

// ScriptModel registers the scripted model's script for one API key. Every
// model request that presents the key is attributed to s.Session; so is any
// other hit that carries the key's control token (registered as the
// session's in-band tag), wherever the agent sends it.
func (l *Lab) ScriptModel(key string, s model.Script) error {
	if key == "" || s.Session == "" {
		return errors.New("lab: script model: key and session are required")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.models == nil {
		l.models = map[string]model.Script{}
	}
	if old, ok := l.models[key]; ok && old.Session != s.Session {
		return fmt.Errorf("lab: script model: key already belongs to session %s", old.Session)
	}
	l.models[key] = s
	minted.Register(minted.ModelKey, key)
	if tok := controlRE.FindString(strings.ToLower(key)); tok != "" {
		l.byTag[tok] = s.Session
	}
	return nil
}

// Transcript returns the model records of one session, in arrival order:
// every request its agent made to the scripted model (see model.Record).
func (l *Lab) Transcript(session string) []model.Record {
	return l.transcript.of(session)
}

func (l *Lab) lookupModel(key string) (model.Script, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.models[key]
	return s, ok
}

// modelHandler is the scripted model as the inference host serves it: each
// request is a hit on "inference" (the positive control) attributed by its
// key, and a transcript record.
func (l *Lab) modelHandler() http.Handler {
	return model.New(model.Options{Lookup: l.lookupModel, Observe: func(ex model.Exchange) {
		rec := ex.Record
		// The body as the model read it (decompressed): what reached the model.
		h := httpHit("inference", ex.Request, ex.Body)
		h.Served = rec.Status == http.StatusOK
		if rec.API != "" {
			h.Summary += fmt.Sprintf(" model=%s step=%d", rec.API, rec.Step)
		}
		if ex.Known {
			h.Session, h.Attribution = rec.Session, "key"
		}
		h = l.record(h, h.Src)
		if rec.Session == "" {
			rec.Session = h.Session // a preconnect or an unknown key: whoever the hit is pinned on
		}
		l.transcript.add(rec)
	}})
}

// transcriptLog keeps model records per session, bounded, and appends each
// to a writer as a JSON line (the trace keeps canaries; print Redacted). As
// for hits (keepLine), a record is kept in memory and file or in neither.
type transcriptLog struct {
	mu        sync.Mutex
	bySession map[string][]model.Record
	max       int
	dropped   int
	w         io.Writer
	encErr    error
}

func newTranscriptLog(w io.Writer) *transcriptLog {
	return &transcriptLog{bySession: map[string][]model.Record{}, max: DefaultMaxTranscript, w: w}
}

func (t *transcriptLog) add(r model.Record) {
	if t == nil {
		return
	}
	line, err := json.Marshal(r)
	if err != nil {
		line = nil // cannot happen for a Record; counted as an empty line if it did
	}
	line = append(line, '\n')
	t.mu.Lock()
	defer t.mu.Unlock()
	if !keepLine(t.w, line, len(t.bySession[r.Session]) >= t.max, &t.encErr) {
		t.dropped++
		return
	}
	t.bySession[r.Session] = append(t.bySession[r.Session], r)
}

func (t *transcriptLog) of(session string) []model.Record {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]model.Record(nil), t.bySession[session]...)
}

func (t *transcriptLog) err() error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.encErr
}
