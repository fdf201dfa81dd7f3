package lab

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// peerCred reads SO_PEERCRED: the pid and uid of the connecting process as
// the host sees them.
func peerCred(fd int) string {
	cr, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return "?"
	}
	return fmt.Sprintf("pid=%d,uid=%d", cr.Pid, cr.Uid)
}
