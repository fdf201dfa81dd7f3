package detect

import (
	"testing"
	"time"
)

func TestMatchNeedsSessionKindObjectAndWindow(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	a := Attempt{ID: "http", Keys: []SessionKey{{CgroupID: 7, LoginUID: 4242}}, Kind: KindConnect, Object: "203.0.113.10:80", From: t0, To: t0.Add(time.Second)}
	ok := Event{Kind: KindConnect, Object: "203.0.113.10:80", Key: SessionKey{CgroupID: 7}, Received: t0.Add(100 * time.Millisecond)}
	tests := []struct {
		name string
		mod  func(e *Event)
		want bool
	}{
		{"same session, kind, object, in window", func(e *Event) {}, true},
		{"by loginuid", func(e *Event) { e.Key = SessionKey{LoginUID: 4242} }, true},
		{"another session", func(e *Event) { e.Key = SessionKey{CgroupID: 8} }, false},
		{"no session key: never by time alone", func(e *Event) { e.Key = SessionKey{} }, false},
		{"unset loginuid is no key", func(e *Event) { e.Key = SessionKey{LoginUID: 4294967295} }, false},
		{"other kind", func(e *Event) { e.Kind = KindDNS }, false},
		{"other object", func(e *Event) { e.Object = "203.0.113.100:80" }, false},
		{"before the attempt", func(e *Event) { e.Received = t0.Add(-time.Millisecond) }, false},
		{"within grace after", func(e *Event) { e.Received = t0.Add(1500 * time.Millisecond) }, true},
		{"after grace", func(e *Event) { e.Received = t0.Add(3 * time.Second) }, false},
		{"imported: window on its event time", func(e *Event) {
			e.Imported, e.Received, e.EventTime = true, time.Time{}, t0.Add(200*time.Millisecond)
		}, true},
		{"imported: event time outside the window", func(e *Event) {
			e.Imported, e.Received, e.EventTime = true, time.Time{}, t0.Add(-time.Second)
		}, false},
		{"imported without an event time", func(e *Event) { e.Imported, e.Received = true, time.Time{} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := ok
			tt.mod(&e)
			if got := Match(e, a, time.Second); got != tt.want {
				t.Errorf("Match = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOpenMatchesAtOrUnderTheSearchedFolder(t *testing.T) {
	t0 := time.Now()
	a := Attempt{Keys: []SessionKey{{CgroupID: 1}}, Kind: KindOpen, Object: "/home", From: t0, To: t0.Add(time.Second)}
	for obj, want := range map[string]bool{"/home": true, "/home/agent/.aws/credentials": true, "/homework/x": false, "/etc/passwd": false} {
		e := Event{Kind: KindOpen, Object: obj, Key: SessionKey{CgroupID: 1}, Received: t0.Add(time.Millisecond)}
		if got := Match(e, a, 0); got != want {
			t.Errorf("open %s for a search of /home: %v, want %v", obj, got, want)
		}
	}
}

// An exit is a life-cycle record: whatever its object, session and time, it
// is never the observation of an attempt, not even one of its own kind.
func TestExitIsNeverMatched(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	key := SessionKey{CgroupID: 7, LoginUID: 4242}
	for _, kind := range []string{KindConnect, KindDNS, KindOpen, KindExec, KindExit} {
		for _, obj := range []string{"203.0.113.10:80", "t1.oob.gatehouse.test", "/home/agent/.aws/credentials", "4242"} {
			a := Attempt{ID: "a", Keys: []SessionKey{key}, Kind: kind, Object: obj, From: t0, To: t0.Add(time.Second)}
			e := Event{Source: "builtin", Kind: KindExit, Object: obj, Key: key, EventTime: t0.Add(time.Millisecond), Received: t0.Add(time.Millisecond)}
			if Match(e, a, time.Second) {
				t.Errorf("an exit event (object %q) matched a %s attempt", obj, kind)
			}
			// The same event as an observation of that kind does match:
			// the test would catch a Match that matches nothing.
			if e.Kind = kind; kind != KindExit && !Match(e, a, time.Second) {
				t.Errorf("control: a %s event for %q did not match", kind, obj)
			}
		}
	}
}

func TestExitsGone(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		e    Exits
		gone bool
	}{
		{Exits{Exits: 3, Last: t0, Empty: true}, true},
		{Exits{Exits: 3, Last: t0}, false}, // a task is left
		{Exits{Empty: true}, false},        // empty, but no exit seen: when is unknown
	} {
		if at, ok := tt.e.Gone(); ok != tt.gone || (ok && !at.Equal(t0)) {
			t.Errorf("%+v: Gone %v %v, want %v", tt.e, at, ok, tt.gone)
		}
	}
}
