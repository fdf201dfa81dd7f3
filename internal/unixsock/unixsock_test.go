package unixsock

import (
	"net"
	"os"
	"syscall"
	"testing"
)

// socketPair returns our end of a connected unix stream pair and the
// peer's end as a raw fd, so a test can close the peer at an exact moment.
func socketPair(t *testing.T) (net.Conn, int) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fds[0]), "ours")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, fds[1]
}

// The peer answers and closes before reading: our write then fails
// (EPIPE) every time, deterministically, and the answer must still be read.
func TestExchangeReadsAnswerAfterFailedWrite(t *testing.T) {
	tests := []struct {
		name     string
		answer   string
		peer     func(fd int) // what the peer does before we write
		wantData bool
	}{
		{"answered then closed", "HTTP/1.0 200 OK\r\n\r\nsecret", func(fd int) { syscall.Close(fd) }, true},
		{"closed without answering", "", func(fd int) { syscall.Close(fd) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, peer := socketPair(t)
			if tt.answer != "" {
				if _, err := syscall.Write(peer, []byte(tt.answer)); err != nil {
					t.Fatal(err)
				}
			}
			tt.peer(peer)
			// Prove the precondition: a write now fails.
			if _, err := c.Write([]byte("x")); !peerGone(err) {
				t.Fatalf("precondition: write to a closed peer gave %v, want EPIPE", err)
			}
			b, err := exchange(c, []byte("GET / HTTP/1.0\r\n\r\n"), readCap)
			if tt.wantData {
				if string(b) != tt.answer || err != nil {
					t.Errorf("exchange = %q, %v; want the answer and no error", b, err)
				}
				return
			}
			if len(b) != 0 || err == nil {
				t.Errorf("exchange = %q, %v; want no data and the write error", b, err)
			}
		})
	}
}

// The peer answers and closes with our request unread in its queue: the
// kernel then reports ECONNRESET after the data, which must not lose it.
func TestExchangeKeepsAnswerBeforeReset(t *testing.T) {
	c, peer := socketPair(t)
	if _, err := c.Write([]byte("request the peer never reads")); err != nil {
		t.Fatal(err)
	}
	syscall.Write(peer, []byte("answer"))
	syscall.Close(peer)
	b, err := exchange(c, []byte("more"), readCap)
	if string(b) != "answer" || err != nil {
		t.Errorf("exchange = %q, %v; want the answer and no error", b, err)
	}
}
