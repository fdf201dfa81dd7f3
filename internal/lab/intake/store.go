package intake

import (
	"encoding/json"
	"sort"
	"sync"
	"time"
)

// Entry is what the service holds for one (tenant, run, report): the
// result last accepted, the evidence attached, and whether it is final.
type Entry struct {
	Subject
	Result    *Result                    `json:"result,omitempty"`
	Extra     map[string]json.RawMessage `json:"extra,omitempty"` // only a broken variant ever fills this
	Evidence  []Attachment               `json:"evidence,omitempty"`
	Finalised bool                       `json:"finalised"`
	Writes    int                        `json:"writes"` // accepted writes (results and attachments)
	Updated   time.Time                  `json:"updated"`
}

// Attachment is one piece of attached evidence as the service keeps it:
// its name, size and digest, never its bytes (they would reach the
// rehearsal's evidence, as base64, once per copy of the entry).
type Attachment struct {
	Name        string    `json:"name"`
	ContentType string    `json:"content_type"`
	SHA256      string    `json:"sha256"`
	Size        int       `json:"size"`
	Time        time.Time `json:"time"`
}

// attachedBytes is the size of every attachment the entry holds.
func (e *Entry) attachedBytes() int {
	n := 0
	for _, a := range e.Evidence {
		n += a.Size
	}
	return n
}

// Store is the service's state, keyed by subject. Its methods return
// copies: a caller cannot change what the service holds.
type Store struct {
	mu      sync.Mutex
	entries map[Subject]*Entry
}

func newStore() *Store { return &Store{entries: map[Subject]*Entry{}} }

// Get returns the entry for s, and whether anything was ever stored for it.
func (s *Store) Get(sub Subject) (Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[sub]
	if !ok {
		return Entry{Subject: sub}, false
	}
	return e.clone(), true
}

// All returns every entry, ordered by tenant, run, report.
func (s *Store) All() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Entry, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, e.clone())
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Subject, out[j].Subject
		if a.Tenant != b.Tenant {
			return a.Tenant < b.Tenant
		}
		if a.Run != b.Run {
			return a.Run < b.Run
		}
		return a.Report < b.Report
	})
	return out
}

// update runs f on the entry for sub (made if missing) under the lock.
// f returns false to leave the store as it was. f gets a shallow copy: it
// may replace fields and append to Evidence (what is appended past the
// stored length is not seen until f's copy is stored), never change an
// element in place. So a write costs no copy of what the entry holds;
// readers get clones.
func (s *Store) update(sub Subject, f func(e *Entry) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[sub]
	if !ok {
		e = &Entry{Subject: sub}
	}
	cp := *e
	if !f(&cp) {
		return
	}
	s.entries[sub] = &cp
}

func (e *Entry) clone() Entry {
	c := *e
	if e.Result != nil {
		r := *e.Result
		r.Findings = append([]string(nil), r.Findings...)
		c.Result = &r
	}
	if e.Extra != nil {
		c.Extra = map[string]json.RawMessage{}
		for k, v := range e.Extra {
			c.Extra[k] = append(json.RawMessage(nil), v...)
		}
	}
	c.Evidence = append([]Attachment(nil), e.Evidence...)
	return c
}
