package ledger

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A queue of ours is removed (twice is fine); a name not ours is refused
// and left alone.
func TestUnlinkMqueue(t *testing.T) {
	name := fmt.Sprintf("/gatehouse-xs-test-%d", os.Getpid())
	p, _ := unix.BytePtrFromString(strings.TrimPrefix(name, "/"))
	fd, _, errno := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(p)), unix.O_RDONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o600, 0, 0, 0)
	if errno == unix.ENOSYS {
		t.Skip("no POSIX message queues here")
	}
	if errno != 0 {
		t.Fatalf("mq_open: %v", errno)
	}
	unix.Close(int(fd))
	for range 2 {
		if err := unlinkMqueue(name); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, errno := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(p)), unix.O_RDONLY|unix.O_CLOEXEC, 0, 0, 0, 0); errno != unix.ENOENT {
		t.Errorf("queue still there after unlink (open: %v)", errno)
	}
	for _, bad := range []string{"/other-queue", "/gatehouse-", "/gatehouse-a/b", "gatehouse-x"} {
		if err := unlinkMqueue(bad); err == nil || !strings.Contains(err.Error(), "not one of ours") {
			t.Errorf("unlinkMqueue(%q) = %v, want a refusal", bad, err)
		}
	}
}
