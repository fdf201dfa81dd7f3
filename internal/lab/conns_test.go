package lab

import (
	"net"
	"net/netip"
	"testing"
	"time"
)

// A cut peer's connections end at the cut, and one it made before the cut
// but accepted only after it (it waited in the backlog) ends at once; a
// forgotten (detached) address is served again.
func TestCutEndsBackloggedConnections(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var set connSet
	tl := set.track(ln)
	dial := func() net.Conn {
		c, err := net.Dial("tcp4", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	loop := netip.MustParseAddr("127.0.0.1")
	open := dial()
	defer open.Close()
	served, err := tl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	queued := dial() // in the backlog, not yet accepted
	defer queued.Close()
	if n := set.closeFrom(loop); n != 1 {
		t.Errorf("closeFrom ended %d connections, want the 1 accepted", n)
	}
	if _, err := served.Read(make([]byte, 1)); err == nil {
		t.Error("the accepted connection still reads after the cut")
	}
	late, err := tl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	_ = queued.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := queued.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("the backlogged connection was not ended: %v", err)
	}
	late.Close()
	set.forget(loop)
	again := dial()
	defer again.Close()
	c, err := tl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := again.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(buf); err != nil {
		t.Errorf("a forgotten address is not served again: %v", err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
