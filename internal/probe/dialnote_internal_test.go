package probe

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// A tcp or udp attempt notes the address its connect began toward (the
// harness counts that flow's opening packets to prove a timeout), loopback
// only here.
func TestAttemptsNoteWhereTheyDialed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	for _, tc := range []struct {
		kind, target string
		do           func(context.Context, wire.Step, *wire.Report) error
	}{
		{wire.KindTCP, ln.Addr().String(), doTCP},
		{wire.KindUDP, pc.LocalAddr().String(), doUDP},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			var rep wire.Report
			_ = tc.do(ctx, wire.Step{Kind: tc.kind, Target: tc.target, Payload: "x"}, &rep)
			if len(rep.Dialed) != 1 || rep.Dialed[0] != tc.target {
				t.Fatalf("dialed %q, want [%s]", rep.Dialed, tc.target)
			}
			if rep.Answered {
				t.Fatal("an address needs no lookup, yet the report says one was answered")
			}
		})
	}
}

// The resolver's conns note the first answer read, and a UDP one stays a
// net.PacketConn (the resolver sends datagrams only to those).
func TestResolverConnsNoteTheAnswer(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go func() {
		buf := make([]byte, 512)
		n, from, err := pc.ReadFrom(buf)
		if err == nil {
			_, _ = pc.WriteTo(buf[:n], from)
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 512)
		n, _ := c.Read(buf)
		_, _ = c.Write(buf[:n])
	}()
	for _, tc := range []struct{ network, addr string }{
		{"udp", pc.LocalAddr().String()},
		{"tcp", ln.Addr().String()},
	} {
		t.Run(tc.network, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, n := withNotes(ctx)
			c, err := n.dialDNS(ctx, tc.network, tc.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, isPacket := c.(net.PacketConn); isPacket != (tc.network == "udp") {
				t.Fatalf("%s conn: net.PacketConn %v", tc.network, isPacket)
			}
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			var rep wire.Report
			n.fill(&rep)
			if rep.Answered {
				t.Fatal("answered before anything was read")
			}
			if _, err := c.Write([]byte("query")); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Read(make([]byte, 64)); err != nil {
				t.Fatal(err)
			}
			n.fill(&rep)
			if !rep.Answered {
				t.Fatal("an answer was read and not noted")
			}
		})
	}
}

// An attempt's duration comes from the monotonic clock: after a backward
// step of the wall clock its Start is later than now, and the duration
// measured from it was negative, which the harness drops as out of range.
func TestDurationIgnoresWallClockSteps(t *testing.T) {
	began := time.Now()
	rep := wire.Report{ID: "a", Kind: wire.KindTCP, Start: began.UTC().Add(time.Hour)}
	rep = finish(rep, nil, began)
	if rep.DurationMS < 0 || rep.DurationMS > 60_000 {
		t.Fatalf("duration %v ms, want the monotonic time since the attempt began", rep.DurationMS)
	}
}
