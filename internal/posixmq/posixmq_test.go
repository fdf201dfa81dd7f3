package posixmq_test

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/posixmq"
)

// A message sent is the message received; an empty queue says EAGAIN; a
// removed queue cannot be opened, and removing it again is no error.
func TestSendReceiveUnlink(t *testing.T) {
	name := fmt.Sprintf("/gatehouse-test-%d", os.Getpid())
	fd, err := posixmq.Open(name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NONBLOCK, &posixmq.Attr{MaxMsg: 2, MsgSize: 64})
	if errors.Is(err, unix.ENOSYS) {
		t.Skipf("no POSIX message queues here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer posixmq.Unlink(name)
	defer unix.Close(fd)
	if err := posixmq.Send(fd, []byte("GATEHOUSE v\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := posixmq.Receive(fd, buf)
	if err != nil || string(buf[:n]) != "GATEHOUSE v\n" {
		t.Fatalf("receive: %q, %v", buf[:n], err)
	}
	if _, err := posixmq.Receive(fd, buf); !errors.Is(err, unix.EAGAIN) {
		t.Errorf("receive on an empty queue: %v, want EAGAIN", err)
	}
	if err := posixmq.Unlink(name); err != nil {
		t.Fatal(err)
	}
	if _, err := posixmq.Open(name, unix.O_RDONLY, nil); !errors.Is(err, unix.ENOENT) {
		t.Errorf("open after unlink: %v, want ENOENT", err)
	}
	if err := posixmq.Unlink(name); err != nil {
		t.Errorf("unlink of a missing queue: %v", err)
	}
}

func TestNameMustBeSlashName(t *testing.T) {
	for _, n := range []string{"", "/", "/a/b"} {
		if err := posixmq.Unlink(n); err == nil {
			t.Errorf("Unlink(%q): no error", n)
		}
	}
}
