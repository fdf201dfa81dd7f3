package ledger

import (
	"fmt"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// unlinkMqueue removes a POSIX message queue a leaky session may have
// left in the host's IPC namespace. Only names of ours ("/gatehouse-",
// no other slash) are touched; one already gone is fine.
func unlinkMqueue(name string) error {
	n, ok := strings.CutPrefix(name, "/gatehouse-")
	if !ok || n == "" || strings.Contains(n, "/") {
		return fmt.Errorf("refusing message queue %q: not one of ours", name)
	}
	p, err := unix.BytePtrFromString(strings.TrimPrefix(name, "/"))
	if err != nil {
		return err
	}
	_, _, errno := unix.Syscall(unix.SYS_MQ_UNLINK, uintptr(unsafe.Pointer(p)), 0, 0)
	if errno != 0 && errno != unix.ENOENT && errno != unix.ENOSYS {
		return fmt.Errorf("remove message queue %s: %w", name, errno)
	}
	return nil
}
