package lab

import (
	"regexp"
	"strings"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// tagRE is the shape of a session tag: the session canary ("ghc" and 16
// hex digits) or its control token ("ghctl" and 16 hex digits, carried in
// its scripted-model key). DNS may change its case, so hits are matched
// lowercased.
var tagRE = regexp.MustCompile(`ghc(?:tl)?[0-9a-f]{16}`)

// Track tells the lab about a session: the in-band tags its attempts carry
// (path, query, header, payload, DNS label), and that it is alive until
// Untrack. Tags attribute hits even when sessions share one network and
// one source address (host networking); liveness lets an untagged hit be
// pinned on the only session that could have sent it.
func (l *Lab) Track(session string, tags ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range tags {
		if t != "" {
			l.byTag[strings.ToLower(t)] = session
		}
	}
	l.alive[session] = true
}

// Untrack marks a session ended. Its tags still attribute hits that arrive
// later: a late packet is still that session's.
func (l *Lab) Untrack(session string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.alive, session)
}

// attribute decides whose a hit is: by in-band tag first (unguessable, so
// it cannot be pinned on a session that did not send it), by source
// address second, and, for a hit with neither, by being the only session
// alive when it arrived. "" when none applies: an unattributed contact.
func (l *Lab) attribute(h evidence.Hit, from string) (session, how string) {
	text := strings.ToLower(h.Summary + "\n" + h.Data)
	l.mu.Lock()
	for _, t := range tagRE.FindAllString(text, -1) {
		if s, ok := l.byTag[t]; ok {
			l.mu.Unlock()
			return s, "tag"
		}
	}
	l.mu.Unlock()
	if s := l.sessionOf(from); s != "" {
		return s, "address"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.alive) == 1 {
		for s := range l.alive {
			return s, "only-live-session"
		}
	}
	return "", ""
}
