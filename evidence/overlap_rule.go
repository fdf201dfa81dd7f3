package evidence

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Overlap is the outcome of the overlap rule.
type Overlap struct {
	// Missed are times the sessions did not meet: a receive and the other
	// session's send on the same channel that shared too little time, or
	// an attempt at work while the other session had no live process.
	Missed []string
	// Unproven are attempts with no time to judge: a send or search that
	// reported no active window (or only one outside its run), a session
	// with no live process on record, one that never listened at all.
	Unproven []string
	// Shortest is the least time a paired send and receive shared (zero
	// when none were paired).
	Shortest time.Duration
	Pairs    int
}

// OK: the sessions were shown to have run at the same time.
func (o Overlap) OK() bool { return len(o.Missed) == 0 && len(o.Unproven) == 0 }

// Reason says why not, naming a few of the attempts.
func (o Overlap) Reason() string {
	switch {
	case len(o.Missed) > 0:
		return "the sessions did not run at the same time: " + capList(o.Missed, 3)
	case len(o.Unproven) > 0:
		return "no proof that the sessions ran at the same time: " + capList(o.Unproven, 3)
	}
	return ""
}

// CheckOverlap applies the overlap rule of the two-session gates. For
// every party and every attempt it planned:
//   - a send or search needs an active window inside its run; a receive
//     without one never listened, so nothing could reach it that way;
//   - every window must lie inside every other party's live window: the
//     other session was running (its processes, sockets and files there)
//     the whole time this one looked;
//   - every receive window must share at least MinCommon with each other
//     party's send on the same channel;
//   - a party that planned receives must have listened on at least one.
func CheckOverlap(parties []Party, t Timing) Overlap {
	minCommon := t.MinCommon
	if minCommon <= 0 {
		minCommon = DefaultMinCommon
	}
	var o Overlap
	type key struct{ session, attempt string }
	acts := map[key]Activity{}
	sends := map[key]Window{} // by session and channel
	for _, a := range t.Activities {
		acts[key{a.Session, a.Attempt}] = a
		if w, ok := a.Seen(); ok && a.Role == RoleSend {
			sends[key{a.Session, a.Channel}] = w
		}
	}
	for _, p := range parties {
		if !t.Live[p.Session].Valid() {
			o.Unproven = append(o.Unproven, "no live process on record in "+p.Session)
		}
	}
	for _, p := range parties {
		receives, listened := 0, 0
		for _, id := range p.Planned {
			a, ok := acts[key{p.Session, id}]
			if !ok {
				o.Unproven = append(o.Unproven, fmt.Sprintf("no active window for %s in %s", id, p.Session))
				continue
			}
			w, ok := a.Seen()
			if a.Role == RoleReceive {
				receives++
			}
			switch {
			case !ok && a.Role == RoleReceive:
				continue // never listened
			case !ok:
				o.Unproven = append(o.Unproven, fmt.Sprintf("no active window for %s in %s inside its run", id, p.Session))
				continue
			case a.Role == RoleReceive:
				listened++
			}
			for _, q := range parties {
				if q.Session == p.Session {
					continue
				}
				if live := t.Live[q.Session]; live.Valid() && !w.inside(live) {
					o.Missed = append(o.Missed, fmt.Sprintf("%s in %s was at work while %s had no live process", id, p.Session, q.Session))
				}
				if a.Role != RoleReceive {
					continue
				}
				sw, ok := sends[key{q.Session, a.Channel}]
				if !ok {
					continue // q offered nothing on this channel
				}
				c := common(w, sw)
				o.Pairs++
				if o.Pairs == 1 || c < o.Shortest {
					o.Shortest = c
				}
				if c < minCommon {
					o.Missed = append(o.Missed, fmt.Sprintf("%s in %s listened only %s while %s offered (need %s)",
						id, p.Session, dur(c), q.Session, dur(minCommon)))
				}
			}
		}
		if receives > 0 && listened == 0 {
			o.Unproven = append(o.Unproven, p.Session+" never listened on any channel")
		}
	}
	return o
}

// Summary is a PASS reason's overlap clause.
func (o Overlap) Summary() string {
	if o.Pairs == 0 {
		return "every attempt ran while the other session had a live process"
	}
	return fmt.Sprintf("every receive shared at least %s with the other session's send (%d pairs), while it had a live process", dur(o.Shortest), o.Pairs)
}

func dur(d time.Duration) string { return d.Round(time.Millisecond).String() }

// capList joins a sorted list, naming at most n items.
func capList(list []string, n int) string {
	l := append([]string(nil), list...)
	sort.Strings(l)
	if len(l) > n {
		return strings.Join(l[:n], "; ") + fmt.Sprintf("; and %d more", len(l)-n)
	}
	return strings.Join(l, "; ")
}
