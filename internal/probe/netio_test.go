package probe_test

import (
	"net"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// tcpServer accepts on loopback and runs handle for each connection.
func tcpServer(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T, network string) string {
	t.Helper()
	if network == "udp" {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().String()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// blackhole returns a loopback listener whose accept queue is full, so the
// kernel drops new SYNs and a connect times out: the lab's "drop" policy.
func blackhole(t *testing.T) string {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*unix.SockaddrInet4).Port))
	for range 2 { // a backlog of 0 still queues one connection
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			t.Cleanup(func() { c.Close() })
		}
	}
	return addr
}

func TestTCP(t *testing.T) {
	echo := tcpServer(t, func(c net.Conn) {
		buf := make([]byte, 64)
		n, _ := c.Read(buf)
		c.Write(append([]byte("got "), buf[:n]...))
	})
	silent := tcpServer(t, func(c net.Conn) { time.Sleep(2 * time.Second) })
	reps := runPlan(t, 600,
		wire.Step{ID: "echo", Kind: wire.KindTCP, Target: echo, Payload: "canary"},
		wire.Step{ID: "silent", Kind: wire.KindTCP, Target: silent, Payload: "x"},
		wire.Step{ID: "refused", Kind: wire.KindTCP, Target: closedPort(t, "tcp")},
		wire.Step{ID: "dropped", Kind: wire.KindTCP, Target: blackhole(t)},
	)
	expect(t, reps["echo"], wire.OutcomeCompleted, "got canary")
	expect(t, reps["silent"], wire.OutcomeCompleted, "")
	expect(t, reps["refused"], wire.OutcomeRefused, "")
	expect(t, reps["dropped"], wire.OutcomeTimeout, "")
	// The timeout was waited out, not cut short (a slow machine can only
	// make it longer, so there is no upper bound).
	if d := reps["dropped"].DurationMS; d < 550 {
		t.Errorf("dropped took %v ms, want at least the 600 ms timeout", d)
	}
	// Steps ran at once: the two slow ones were in flight together.
	if !overlap(reps["silent"], reps["dropped"]) {
		t.Errorf("silent (%v, %v ms) and dropped (%v, %v ms) did not run at the same time", reps["silent"].Start, reps["silent"].DurationMS, reps["dropped"].Start, reps["dropped"].DurationMS)
	}
}

// TestHTTPTimeout: the connection lands in a backlog nobody accepts from,
// so the request is never answered.
func TestHTTPTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	reps := runPlan(t, 300,
		wire.Step{ID: "stuck", Kind: wire.KindHTTP, Target: "http://" + ln.Addr().String() + "/"},
		wire.Step{ID: "refused", Kind: wire.KindHTTP, Target: "http://" + closedPort(t, "tcp") + "/"},
	)
	expect(t, reps["stuck"], wire.OutcomeTimeout, "")
	expect(t, reps["refused"], wire.OutcomeRefused, "")
}

func TestUDP(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 512)
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		got <- string(buf[:n])
		pc.WriteTo([]byte("pong"), from)
	}()
	reps := runPlan(t, 1000,
		wire.Step{ID: "reply", Kind: wire.KindUDP, Target: pc.LocalAddr().String(), Payload: "canary-udp"},
		wire.Step{ID: "closed", Kind: wire.KindUDP, Target: closedPort(t, "udp"), Payload: "x"},
	)
	expect(t, reps["reply"], wire.OutcomeCompleted, "pong")
	select {
	case p := <-got:
		if p != "canary-udp" {
			t.Errorf("server got %q", p)
		}
	default:
		t.Error("server got nothing")
	}
	// A send is "completed" even to a closed port; the refusal is noted.
	if r := reps["closed"]; r.Outcome != wire.OutcomeCompleted || r.Error == "" {
		t.Errorf("closed: outcome %q error %q, want completed with a note", r.Outcome, r.Error)
	}
}

// overlap reports whether two attempts' [start, start+duration] met.
func overlap(a, b wire.Report) bool {
	end := func(r wire.Report) time.Time {
		return r.Start.Add(time.Duration(r.DurationMS * float64(time.Millisecond)))
	}
	return a.Start.Before(end(b)) && b.Start.Before(end(a))
}
