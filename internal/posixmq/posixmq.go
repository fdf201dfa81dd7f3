// Package posixmq speaks to POSIX message queues by their system calls (no
// libc in a sandbox): the probe exchanges values through them, and the
// harness removes a queue a leaky session left in the host's IPC namespace.
package posixmq

import (
	"fmt"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Attr is struct mq_attr (all fields long).
type Attr struct {
	Flags, MaxMsg, MsgSize, CurMsgs int64
	_                               [4]int64
}

// name checks a queue name and returns it without the leading slash,
// the form the kernel takes.
func name(n string) (*byte, error) {
	n0 := strings.TrimPrefix(n, "/")
	if n0 == "" || len(n0) > 255 || strings.Contains(n0, "/") {
		return nil, fmt.Errorf("mq name %q is not /NAME", n)
	}
	return unix.BytePtrFromString(n0)
}

// Open opens (with unix.O_CREAT in flags: makes, with attr) the queue n,
// close-on-exec, mode 0666 before the umask.
func Open(n string, flags int, attr *Attr) (int, error) {
	p, err := name(n)
	if err != nil {
		return -1, err
	}
	fd, _, errno := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(p)),
		uintptr(flags|unix.O_CLOEXEC), 0o666, uintptr(unsafe.Pointer(attr)), 0, 0)
	if errno != 0 {
		return -1, errs(errno)
	}
	return int(fd), nil
}

// Send puts msg on the queue open as fd.
func Send(fd int, msg []byte) error {
	_, _, errno := unix.Syscall6(unix.SYS_MQ_TIMEDSEND, uintptr(fd), uintptr(unsafe.Pointer(&msg[0])), uintptr(len(msg)), 0, 0, 0)
	if errno != 0 {
		return errs(errno)
	}
	return nil
}

// Receive takes one message off the queue open as fd into buf. On a
// non-blocking queue with nothing on it the error is unix.EAGAIN.
func Receive(fd int, buf []byte) (int, error) {
	n, _, errno := unix.Syscall6(unix.SYS_MQ_TIMEDRECEIVE, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
	if errno != 0 {
		return 0, errs(errno)
	}
	return int(n), nil
}

// errs says plainly when the kernel (or gVisor) has no message queues.
func errs(errno unix.Errno) error {
	if errno == unix.ENOSYS {
		return fmt.Errorf("posix message queues not supported here: %w", errno)
	}
	return errno
}

// Unlink removes a queue by name. A missing one is fine.
func Unlink(n string) error {
	p, err := name(n)
	if err != nil {
		return err
	}
	_, _, errno := unix.Syscall(unix.SYS_MQ_UNLINK, uintptr(unsafe.Pointer(p)), 0, 0)
	if errno != 0 && errno != unix.ENOENT {
		return errs(errno)
	}
	return nil
}
