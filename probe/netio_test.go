package probe_test

import (
	"net"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/probe"
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
		probe.Step{ID: "echo", Kind: probe.KindTCP, Target: echo, Payload: "canary"},
		probe.Step{ID: "silent", Kind: probe.KindTCP, Target: silent, Payload: "x"},
		probe.Step{ID: "refused", Kind: probe.KindTCP, Target: closedPort(t, "tcp")},
		probe.Step{ID: "dropped", Kind: probe.KindTCP, Target: blackhole(t)},
	)
	expect(t, reps["echo"], probe.OutcomeCompleted, "got canary")
	expect(t, reps["silent"], probe.OutcomeCompleted, "")
	expect(t, reps["refused"], probe.OutcomeRefused, "")
	expect(t, reps["dropped"], probe.OutcomeTimeout, "")
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
		probe.Step{ID: "stuck", Kind: probe.KindHTTP, Target: "http://" + ln.Addr().String() + "/"},
		probe.Step{ID: "refused", Kind: probe.KindHTTP, Target: "http://" + closedPort(t, "tcp") + "/"},
	)
	expect(t, reps["stuck"], probe.OutcomeTimeout, "")
	expect(t, reps["refused"], probe.OutcomeRefused, "")
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
		probe.Step{ID: "reply", Kind: probe.KindUDP, Target: pc.LocalAddr().String(), Payload: "canary-udp"},
		probe.Step{ID: "closed", Kind: probe.KindUDP, Target: closedPort(t, "udp"), Payload: "x"},
	)
	expect(t, reps["reply"], probe.OutcomeCompleted, "pong")
	select {
	case p := <-got:
		if p != "canary-udp" {
			t.Errorf("server got %q", p)
		}
	default:
		t.Error("server got nothing")
	}
	// A send is "completed" even to a closed port; the refusal is noted.
	if r := reps["closed"]; r.Outcome != probe.OutcomeCompleted || r.Error == "" {
		t.Errorf("closed: outcome %q error %q, want completed with a note", r.Outcome, r.Error)
	}
}

// overlap reports whether two attempts' [start, start+duration] met.
func overlap(a, b probe.Report) bool {
	end := func(r probe.Report) time.Time {
		return r.Start.Add(time.Duration(r.DurationMS * float64(time.Millisecond)))
	}
	return a.Start.Before(end(b)) && b.Start.Before(end(a))
}
