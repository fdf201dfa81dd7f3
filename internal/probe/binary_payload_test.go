package probe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// A payload that is not text (a QUIC Initial starts 0xc3 0x00...) must
// reach the wire byte for byte after the plan's JSON trip, which a string
// Payload cannot promise.
func TestBinaryPayloadSurvivesThePlan(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	want := []byte{0xc3, 0x00, 0x00, 0x00, 0x01, 0xff, 'c', 'a', 'n'}
	js, err := json.Marshal(wire.Plan{TimeoutMS: 500, Steps: []wire.Step{
		{ID: "quic", Kind: wire.KindUDP, Target: pc.LocalAddr().String(), Binary: want, Payload: "ignored"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := wire.ReadPlan(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := probe.Run(context.Background(), plan, &out); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	_ = pc.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, _, err := pc.ReadFrom(buf)
	if err != nil {
		t.Fatalf("nothing arrived: %v (probe said %s)", err, out.String())
	}
	if !bytes.Equal(buf[:n], want) {
		t.Errorf("arrived %x, want %x", buf[:n], want)
	}
}
