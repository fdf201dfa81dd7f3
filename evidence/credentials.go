package evidence

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Credential is a credential-shaped value a hunt reported: its type,
// where the probe found it and the SHA-256 of the value. The value itself
// never leaves the sandbox, so it is never recorded or printed; the hash
// lets an auditor check a suspected key offline.
type Credential struct {
	Type    string   `json:"type"`
	SHA256  string   `json:"sha256"`
	Where   []string `json:"where"`
	Attempt string   `json:"attempt"`
}

// credLine is the probe's "cred TYPE SHA256 WHERE" excerpt line.
var credLine = regexp.MustCompile(`^cred ([a-z0-9-]{1,40}) ([0-9a-f]{64}) (.{1,400})$`)

// foreignCredentials returns the credentials this session's hunts
// reported whose hash is not one of Gatehouse's own values (ours: hash ->
// what it is), one entry per value with every place it was seen. A hunt's
// word is enough for a FAIL: it can only make the verdict stricter.
func foreignCredentials(session string, attempts []Attempt, ours map[string]string) []Credential {
	by := map[string]*Credential{}
	for _, a := range attempts {
		if a.Session != session || a.Kind != "hunt" {
			continue
		}
		for _, line := range strings.Split(a.Excerpt, "\n") {
			m := credLine.FindStringSubmatch(line)
			if m == nil || ours[m[2]] != "" {
				continue
			}
			c := by[m[2]]
			if c == nil {
				c = &Credential{Type: m[1], SHA256: m[2], Attempt: a.ID}
				by[m[2]] = c
			}
			if len(c.Where) < 8 {
				c.Where = append(c.Where, m[3])
			}
		}
	}
	out := make([]Credential, 0, len(by))
	for _, c := range by {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Type != out[j].Type {
			return out[i].Type < out[j].Type
		}
		return out[i].SHA256 < out[j].SHA256
	})
	return out
}

// String names a credential by type, hash prefix and places: what a
// reason or finding may print.
func (c Credential) String() string {
	where := make([]string, len(c.Where))
	for i, w := range c.Where {
		if len(w) > 120 {
			w = w[:120] + "…"
		}
		where[i] = w
	}
	return fmt.Sprintf("%s (sha256 %s…) at %s", c.Type, c.SHA256[:12], strings.Join(where, ", "))
}

func describeCredentials(cs []Credential) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.String()
	}
	return strings.Join(parts, "; ")
}
