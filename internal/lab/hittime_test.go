package lab

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// A hit keeps Go's monotonic reading in memory (the stop's timings are
// made on that clock, which a step of the wall clock leaves alone) and is
// written in UTC, with none.
func TestHitTimeKeepsTheMonotonicClock(t *testing.T) {
	l := &Lab{hits: newHitLog(0, nil), sessions: map[string]*attachment{}, bySrc: map[netip.Addr]string{},
		byTag: map[string]string{}, alive: map[string]bool{}}
	before := time.Now()
	h := l.record(evidence.Hit{Endpoint: "callback", Summary: "GET /"}, "")
	if !strings.Contains(h.Time.String(), " m=") {
		t.Errorf("the stored hit's time has no monotonic reading: %s", h.Time)
	}
	if stored := l.Hits(); len(stored) != 1 || !strings.Contains(stored[0].Time.String(), " m=") {
		t.Errorf("the hit log lost the monotonic reading: %v", stored)
	}
	if h.Time.Before(before) {
		t.Errorf("stamped %s, before the call at %s", h.Time, before)
	}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Time string `json:"time"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(back.Time, "Z") {
		t.Errorf("the hit's JSON time is not UTC: %s", back.Time)
	}
	var decoded evidence.Hit
	if err := json.Unmarshal(b, &decoded); err != nil || !decoded.Time.Equal(h.Time) || decoded.Summary != h.Summary {
		t.Errorf("round trip: %+v (%v), want %+v", decoded, err, h)
	}
}
