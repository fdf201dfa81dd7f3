package lab_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/lab"
)

// The session's kernel counts what it emits toward each lab destination,
// before any egress policy: the harness's proof of attempt.
func TestEmittedCountsWhatLeftTheSession(t *testing.T) {
	needLab(t)
	l := upLab(t)
	nw := attach(t, l, "acct")
	ctx := context.Background()
	before, err := l.Emitted(ctx, "acct")
	if err != nil {
		t.Fatal(err)
	}
	if before["callback4"] != 0 || before["metadata4"] != 0 {
		t.Fatalf("counters not zero at start: %v", before)
	}
	c, err := dial(ctx, nw, "udp", lab.CallbackV4+":9001")
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("counted"))
	c.Close()
	deadline := time.Now().Add(2 * time.Second)
	for {
		after, err := l.Emitted(ctx, "acct")
		if err != nil {
			t.Fatal(err)
		}
		if after["callback4"] >= 1 {
			if after["metadata4"] != 0 {
				t.Errorf("a packet to the callback was counted toward metadata: %v", after)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no packet counted toward the callback: %v", after)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if lab.DestOf(lab.MetadataV4) != "metadata4" || lab.DestOf("192.0.2.1") != "" {
		t.Error("DestOf maps addresses wrongly")
	}
	if _, err := l.Emitted(ctx, "nobody"); err == nil {
		t.Error("Emitted of an unknown session succeeded")
	}
}
