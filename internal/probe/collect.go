package probe

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gatehouse-dev/gatehouse/internal/creds"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// collector gathers what a search finds. The search runs in its own
// goroutine (see gather) and may still be running when the report is
// written, hence the lock.
type collector struct {
	mu    sync.Mutex
	match func([]byte) []string // values reported in clear ("value where")
	skip  string                // the probe's own value, never reported
	vals  []string
	where map[string]string
	creds []creds.Cred
	seen  map[string]bool // credential hashes already listed
	lines []string        // other findings, one line each
	notes []string        // what was left out by rule: shown if room is left
	head  string          // a first line (a host check's "ok:" or "exposed:")
	files int             // regular files read
}

func newCollector(match func([]byte) []string, skip string) *collector {
	return &collector{match: match, skip: skip, where: map[string]string{}, seen: map[string]bool{}}
}

// values records the matching values in b, each with where it was first seen.
func (c *collector) values(b []byte, where string) {
	vs := c.match(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range vs {
		if v == c.skip || c.where[v] != "" {
			continue
		}
		c.where[v] = oneLine(where)
		c.vals = append(c.vals, v)
	}
}

// cred records credentials, once per value.
func (c *collector) cred(cs []creds.Cred) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cr := range cs {
		if !c.seen[cr.SHA256] {
			c.seen[cr.SHA256] = true
			cr.Where = oneLine(cr.Where)
			c.creds = append(c.creds, cr)
		}
	}
}

// line records another finding (a mount, an engine), once.
func (c *collector) line(l string) {
	l = oneLine(l)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, x := range c.lines {
		if x == l {
			return
		}
	}
	c.lines = append(c.lines, l)
}

// note records what a search left out by rule, once. Notes come last and
// one that does not fit is not a lost finding.
func (c *collector) note(l string) {
	l = oneLine(l)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.notes, l) {
		c.notes = append(c.notes, l)
	}
}

// setHead sets the first line of the excerpt.
func (c *collector) setHead(h string) {
	c.mu.Lock()
	c.head = oneLine(clip(h, 200))
	c.mu.Unlock()
}

func (c *collector) readFile() {
	c.mu.Lock()
	c.files++
	c.mu.Unlock()
}

// found returns the clear values so far, in order.
func (c *collector) found() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.vals...)
}

// excerpt renders the findings in at most n bytes: clear values first
// (they are what proves a read), then credentials as "cred TYPE SHA256
// WHERE", then the other lines. It returns how many did not fit.
func (c *collector) excerpt(n int) (string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	if c.head != "" {
		b.WriteString(c.head + "\n")
	}
	dropped := 0
	put := func(full, short string) {
		switch {
		case b.Len()+len(full)+1 <= n:
			b.WriteString(full + "\n")
		case short != "" && b.Len()+len(short)+1 <= n:
			b.WriteString(short + "\n")
		default:
			dropped++
		}
	}
	for _, v := range c.vals {
		put(v+" "+c.where[v], v)
	}
	for _, cr := range c.creds {
		put("cred "+cr.Type+" "+cr.SHA256+" "+cr.Where, "")
	}
	for _, l := range c.lines {
		put(l, "")
	}
	for _, l := range c.notes {
		if b.Len()+len(l)+1 <= n {
			b.WriteString(l + "\n")
		}
	}
	return b.String(), dropped
}

// finish writes the findings into rep and returns the attempt's error: a
// search that did not cover everything (or whose findings did not all
// fit) is partial; a search of a path that does not exist is complete.
func (c *collector) finish(rep *wire.Report, err error) error {
	text, dropped := c.excerpt(wire.ExcerptCap(rep.Kind))
	rep.Excerpt = text
	if dropped > 0 {
		err = withPartial(err, fmt.Sprintf("%d findings did not fit the report", dropped))
	}
	if errors.Is(err, errAbsent) {
		rep.Error = "nothing to search: no such file or directory"
		return nil
	}
	return err
}

// withPartial adds a reason to a partial error, or makes err partial.
func withPartial(err error, why string) error {
	var pe *partialError
	if errors.As(err, &pe) {
		return &partialError{why: append(append([]string(nil), pe.why...), why)}
	}
	if err != nil && !errors.Is(err, errAbsent) {
		why = err.Error() + "; " + why
	}
	return &partialError{why: []string{why}}
}

// oneLine keeps a place name on its line: a file name with a newline must
// not start a line of its own in the excerpt.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return '?'
		}
		return r
	}, s)
}
