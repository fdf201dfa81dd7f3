// Package detect is the common ground of detection: what a monitor or an
// external alert source observed (Event), the session keys that tie an
// observation to a session, and the rule that matches an observation to an
// attempt. Prevention (did the forbidden thing happen) stays with the lab's
// endpoints; detection (did telemetry see it, how late) is scored apart, and
// never by time alone.
//
// Sources live in their own packages (internal/monitor/: Gatehouse's own eBPF
// monitor; internal/alerts/: Falco, Tetragon, audit and OCSF output) and deliver
// Events; the harness matches them to attempts with Match.
package detect

import (
	"context"
	"strings"
	"time"
)

// Kinds of observation, shared by every source.
const (
	KindConnect    = "connect"          // a connect/sendto toward Object ("203.0.113.10:80")
	KindDNS        = "dns"              // a DNS query for Object (a name), or a send to port 53
	KindOpen       = "open"             // an open of the path Object
	KindExec       = "exec"             // an execve of Object
	KindAliveAfter = "alive-after-stop" // a process of the session still running after its stop (Object: its name)
	// KindExit is a life-cycle record, not an observation of an attempt: a
	// process of the session exited (Object: its pid). Match never pairs
	// it with an attempt; the response measurement reads it (see Exits).
	KindExit = "exit"
)

// SessionKey is what a source saw of whose the event was. Any field may be
// empty; the harness knows each session's keys and resolves them.
type SessionKey struct {
	CgroupID    uint64 `json:"cgroup_id,omitempty"`
	CgroupPath  string `json:"cgroup_path,omitempty"`
	LoginUID    uint32 `json:"loginuid,omitempty"` // 0 means unknown (4294967295 is "unset" in the kernel)
	NetnsInode  uint64 `json:"netns_inode,omitempty"`
	ContainerID string `json:"container_id,omitempty"`
	PID         int    `json:"pid,omitempty"`
}

// Event is one observation. Raw keeps the source's own bytes, as evidence.
type Event struct {
	Source string     `json:"source"` // "builtin", "falco", "tetragon", "audit", "ocsf"
	Rule   string     `json:"rule"`   // the rule that fired, as the source names it
	Kind   string     `json:"kind"`   // one of the Kind constants; "" when the source's event maps to none
	Object string     `json:"object"` // destination, name or path, normalised by the source
	Key    SessionKey `json:"key"`
	// EventTime is the source's own time for the event (the kernel's, for
	// most): a clock check only. Received is when the harness got it, on
	// the harness's clock: latency is measured from it.
	EventTime time.Time `json:"event_time"`
	Received  time.Time `json:"received"`
	// Imported marks an event read after the fact (a whole log imported
	// once the run is over): Received is zero, the window is checked on
	// EventTime instead, and the result says "detected, latency not
	// measured".
	Imported bool   `json:"imported,omitempty"`
	Raw      []byte `json:"raw,omitempty"`
}

// Source delivers Events until ctx ends or Close. Events may be dropped
// under a flood; Dropped says how many, so a result can say so.
type Source interface {
	Name() string
	Start(ctx context.Context) error
	Events() <-chan Event
	Dropped() uint64
	Close() error
}

// Attempt is what matching needs of one attempt: its session's keys, its
// kind and object (as the same normalisation gives them) and its window on
// the harness's clock.
type Attempt struct {
	ID       string
	Keys     []SessionKey // every key the harness knows for the attempt's session
	Kind     string
	Object   string
	From, To time.Time
}

// Match reports whether e is an observation of a: the session agrees (one
// non-empty key field equal), the kind and object agree, and the event
// arrived inside the window (Received in [From, To+grace]; for an Imported
// event, which has no Received, its EventTime on the wall clock). Never by
// time alone: an event without a session key or object matches nothing.
func Match(e Event, a Attempt, grace time.Duration) bool {
	if e.Kind == "" || e.Kind == KindExit || e.Kind != a.Kind || e.Object == "" || !sameObject(e.Kind, e.Object, a.Object) {
		return false
	}
	at := e.Received
	if e.Imported {
		at = e.EventTime
	}
	if at.IsZero() || at.Before(a.From) || at.After(a.To.Add(grace)) {
		return false
	}
	for _, k := range a.Keys {
		if SameSession(e.Key, k) {
			return true
		}
	}
	return false
}

// SameSession reports whether two keys name one session: one non-empty
// field equal (an unset login uid, 4294967295, names none).
func SameSession(a, b SessionKey) bool {
	switch {
	case a.CgroupID != 0 && a.CgroupID == b.CgroupID,
		a.CgroupPath != "" && a.CgroupPath == b.CgroupPath,
		a.LoginUID != 0 && a.LoginUID != 4294967295 && a.LoginUID == b.LoginUID,
		a.NetnsInode != 0 && a.NetnsInode == b.NetnsInode,
		a.ContainerID != "" && a.ContainerID == b.ContainerID:
		return true
	}
	return false
}

// Registrar is the optional ability of a source to be told which sessions
// to watch (the builtin monitor filters in the kernel by cgroup): the
// harness registers each session's keys when it starts and unregisters
// them once its verdict is made.
type Registrar interface {
	Register(k SessionKey) error
	Unregister(k SessionKey)
}

// Exits is what a source that sees the kernel's process exits says of one
// session's cgroup: how many of its tasks exited since it was registered,
// the source's time of the latest exit and its process id, and whether no
// task was left in the cgroup when asked. Empty with Exits > 0: the
// session's processes were gone at Last, on the kernel's word.
type Exits struct {
	Exits   int       `json:"exits"`
	Last    time.Time `json:"last,omitzero"`
	LastPID int       `json:"last_pid,omitempty"`
	Empty   bool      `json:"empty"`
}

// Gone reports whether the session's processes are known gone, and when.
func (e Exits) Gone() (time.Time, bool) { return e.Last, e.Empty && e.Exits > 0 }

// StopWatcher is the optional ability of a source to watch a session past
// its stop: after MarkStopped, a process of the session that still runs
// shows as a KindAliveAfter event, and LastExit says when its processes
// were gone. The session stays registered until Unregister.
type StopWatcher interface {
	MarkStopped(k SessionKey, at time.Time) error
	LastExit(ctx context.Context, k SessionKey) (Exits, error)
}

// sameObject: equal, or for an open, the event's path at or under the
// attempt's (a search of a folder is observed as the opens inside it).
func sameObject(kind, got, want string) bool {
	if got == want {
		return true
	}
	return kind == KindOpen && want != "" && strings.HasPrefix(got, strings.TrimSuffix(want, "/")+"/")
}
