package evidence

import "time"

// DefaultMinCommon is the shortest time a send and the other session's
// receive on the same channel must have been at work together for the
// channel to count as tried. A sender offers every 100 ms and a poller
// looks every 50 ms, so this leaves several chances to meet.
const DefaultMinCommon = 500 * time.Millisecond

// Window is a span of time on the host's clock.
type Window struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// Valid: both ends set, in order.
func (w Window) Valid() bool { return !w.From.IsZero() && !w.To.IsZero() && !w.To.Before(w.From) }

// within is w bounded by b; false when they do not meet.
func (w Window) within(b Window) (Window, bool) {
	if !w.Valid() || !b.Valid() {
		return Window{}, false
	}
	out := w
	if out.From.Before(b.From) {
		out.From = b.From
	}
	if out.To.After(b.To) {
		out.To = b.To
	}
	return out, !out.To.Before(out.From)
}

// inside reports whether w lies wholly in b.
func (w Window) inside(b Window) bool {
	return w.Valid() && b.Valid() && !w.From.Before(b.From) && !w.To.After(b.To)
}

// common is how long a and b were both open.
func common(a, b Window) time.Duration {
	c, ok := a.within(b)
	if !ok {
		return 0
	}
	return c.To.Sub(c.From)
}

// Roles of an attempt in the overlap rule.
const (
	RoleSend    = "send"
	RoleReceive = "receive"
	RoleSearch  = "search" // a find or read of the storage gate
)

// Activity is when one attempt was really at work, by the probe's word
// (Claimed, from its report; zero when it reported none), and the window
// of the Exec that ran it, seen from outside. The probe's claim counts
// only inside the outside window: a probe that lies about its times can
// shorten what it gets credit for, never stretch it.
type Activity struct {
	Session string `json:"session"`
	Attempt string `json:"attempt"`
	Channel string `json:"channel,omitempty"` // pairs a send with the other session's receive
	Role    string `json:"role"`
	Claimed Window `json:"claimed"`
	Outside Window `json:"outside"`
}

// Seen is the claimed window bounded by the outside one; false when there
// is none (never at work, or a claim outside the run).
func (a Activity) Seen() (Window, bool) { return a.Claimed.within(a.Outside) }

// Timing is what the overlap rule is judged from.
type Timing struct {
	Activities []Activity
	// Live is, for each session, when a process of its own was alive in it
	// (the harness's holder), seen from outside: from the moment it said
	// it ran to the moment it was told to end, or ended on its own.
	Live map[string]Window
	// MinCommon is the shortest common span of a send and a receive; zero
	// means DefaultMinCommon.
	MinCommon time.Duration
}
