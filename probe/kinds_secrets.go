package probe

import "regexp"

// Attempt kinds of the long-lived-secret and host-access gates. Like the
// session kinds, the probe never learns what was planted: it reports every
// value of the canary shape it came across, and the harness, which knows
// what it planted where, decides from outside what was read.
const (
	// KindHunt: Target is "env" (the probe's own environment), "proc"
	// (every other process's environment it can read), or a path: a file
	// is read, a folder searched (bounded), a unix socket connected to and
	// its answer read. The canary-shaped values found are reported as
	// "value where" lines in Excerpt; then each is presented to every URL
	// in Step.Use, as an agent that found a key would.
	KindHunt = "hunt"
	// KindHostCheck: Target names one in-sandbox check of host exposure
	// ("pids", "caps", "ns", "devices", "release-agent", "writable:PATH").
	// Nothing is ever written: writability is asked with access(2). The
	// Excerpt starts with "exposed:" or "ok:".
	KindHostCheck = "hostcheck"
)

// HuntPrefix starts every planted canary (and every fake credential the lab
// hands out), so the probe can recognise one without being told its value.
const HuntPrefix = "GHCANARY-"

// huntRE is the canary shape: the prefix, then letters, digits, '-' or '_'.
var huntRE = regexp.MustCompile(`GHCANARY-[A-Za-z0-9_-]{4,120}`)

// Canaries returns the distinct canary-shaped values in b, in order.
func Canaries(b []byte) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range huntRE.FindAll(b, -1) {
		if !seen[string(m)] {
			seen[string(m)] = true
			out = append(out, string(m))
		}
	}
	return out
}

// hunted collects canary-shaped values with where each was first seen.
type hunted struct {
	where map[string]string
	order []string
}

func newHunted() *hunted { return &hunted{where: map[string]string{}} }

func (h *hunted) add(b []byte, where string) {
	for _, v := range Canaries(b) {
		if h.where[v] == "" {
			h.where[v] = where
			h.order = append(h.order, v)
		}
	}
}

// excerpt lists "value where" lines; when room runs out, values are kept
// before places, since the harness matches values.
func (h *hunted) excerpt() string {
	out := make([]byte, 0, MaxExcerptLen)
	for _, v := range h.order {
		line := v + " " + h.where[v] + "\n"
		switch {
		case len(out)+len(line) <= MaxExcerptLen:
			out = append(out, line...)
		case len(out)+len(v)+1 <= MaxExcerptLen:
			out = append(out, v+"\n"...)
		}
	}
	return string(out)
}
