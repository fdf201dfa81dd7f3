package probe

import (
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// stepDuration is DurationMS with a default of 2 s and the cap.
func stepDuration(s wire.Step) time.Duration {
	d := time.Duration(s.DurationMS) * time.Millisecond
	switch {
	case d <= 0:
		return 2 * time.Second
	case d > wire.MaxDuration:
		return wire.MaxDuration
	}
	return d
}

// found collects values with where each was first seen, for an Excerpt.
type found struct {
	where map[string]string
	order []string
	skip  string    // the probe's own value, never reported
	from  time.Time // when the receive began to listen; zero: never
}

// listening marks the start of the receive's active window (once).
func (f *found) listening() {
	if f.from.IsZero() {
		f.from = time.Now()
	}
}

func newFound(skip string) *found { return &found{where: map[string]string{}, skip: skip} }

func (f *found) add(b []byte, where string) {
	for _, t := range wire.Tokens(b) {
		if t == f.skip || f.where[t] != "" {
			continue
		}
		f.where[t] = where
		f.order = append(f.order, t)
	}
}

// excerpt lists "value where" lines, values first so that clipping the
// excerpt at MaxExcerptLen loses places before it loses values.
func (f *found) excerpt() string {
	var b strings.Builder
	for _, v := range f.order {
		line := v + " " + f.where[v] + "\n"
		if b.Len()+len(line) > wire.MaxExcerptLen {
			if b.Len()+len(v)+1 <= wire.MaxExcerptLen {
				b.WriteString(v + "\n")
			}
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}
