package report

import (
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// A hit matches itself whether its time is the lab's in-memory reading
// (local zone, monotonic) or the UTC one read back from JSON.
func TestHitKeyIgnoresTheZone(t *testing.T) {
	at := time.Now().In(time.FixedZone("UTC+9", 9*3600))
	mem := evidence.Hit{Time: at, Endpoint: "callback", Src: "198.51.100.6:4000", Summary: "GET /"}
	back := mem
	back.Time = at.UTC().Round(0)
	if hitKey(mem) != hitKey(back) {
		t.Errorf("the same hit has two keys:\n%q\n%q", hitKey(mem), hitKey(back))
	}
	other := back
	other.Time = back.Time.Add(time.Microsecond)
	if hitKey(other) == hitKey(back) {
		t.Error("hits at different times share a key")
	}
}
