package probe

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// POSIX message queues, by their system calls (no libc in a sandbox).
// Each session receives on a queue of its own name and sends to its peer's
// (the harness names both): a queue both read from would let a session
// take its own message off it before the other saw it. The queues live
// in the IPC namespace, so only sessions that share one meet there.
const (
	mqMsgs    = 8   // messages a receiver's queue holds
	mqMsgSize = 256 // bytes a message may have
	mqReadBuf = 8192
)

// mqAttr is struct mq_attr (all fields long).
type mqAttr struct {
	Flags, MaxMsg, MsgSize, CurMsgs int64
	_                               [4]int64
}

// mqName checks a queue name and returns it without the leading slash,
// the form the kernel takes.
func mqName(name string) (*byte, error) {
	n := strings.TrimPrefix(name, "/")
	if n == "" || len(n) > 255 || strings.Contains(n, "/") {
		return nil, fmt.Errorf("mq name %q is not /NAME", name)
	}
	return unix.BytePtrFromString(n)
}

func mqOpen(name string, flags int, attr *mqAttr) (int, error) {
	p, err := mqName(name)
	if err != nil {
		return -1, err
	}
	fd, _, errno := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(p)),
		uintptr(flags|unix.O_CLOEXEC), 0o666, uintptr(unsafe.Pointer(attr)), 0, 0)
	if errno != 0 {
		return -1, mqErr(errno)
	}
	return int(fd), nil
}

// mqErr says plainly when the kernel (or gVisor) has no message queues.
func mqErr(errno unix.Errno) error {
	if errno == unix.ENOSYS {
		return fmt.Errorf("posix message queues not supported here: %w", errno)
	}
	return errno
}

// MqUnlink removes a queue by name (the harness uses it too, for a queue a
// leaky session left in the host's IPC namespace). A missing one is fine.
func MqUnlink(name string) error {
	p, err := mqName(name)
	if err != nil {
		return err
	}
	_, _, errno := unix.Syscall(unix.SYS_MQ_UNLINK, uintptr(unsafe.Pointer(p)), 0, 0)
	if errno != 0 && errno != unix.ENOENT {
		return mqErr(errno)
	}
	return nil
}

// sendMq puts the value on the peer's queue, if this session can see it.
// It never creates the queue: one only the sender sees would hold the
// value where nobody else can read it, and outlive the attempt.
func sendMq(name, v string) error {
	fd, err := mqOpen(name, unix.O_WRONLY|unix.O_NONBLOCK, nil)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	msg := []byte("GATEHOUSE " + v + "\n")
	_, _, errno := unix.Syscall6(unix.SYS_MQ_TIMEDSEND, uintptr(fd), uintptr(unsafe.Pointer(&msg[0])), uintptr(len(msg)), 0, 0, 0)
	if errno != 0 {
		return mqErr(errno)
	}
	return nil
}

// receiveMq makes its own queue, open to any user (the peer may map to
// another uid), reads it every tick until ctx ends, and removes it.
func receiveMq(ctx context.Context, name string, f *found) error {
	attr := mqAttr{MaxMsg: mqMsgs, MsgSize: mqMsgSize}
	fd, err := mqOpen(name, unix.O_RDONLY|unix.O_CREAT|unix.O_NONBLOCK, &attr)
	if err != nil {
		return err
	}
	defer MqUnlink(name)
	defer unix.Close(fd)
	_ = unix.Fchmod(fd, 0o666) // the umask took the others' write bit
	buf := make([]byte, mqReadBuf)
	for {
		for {
			n, _, errno := unix.Syscall6(unix.SYS_MQ_TIMEDRECEIVE, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
			if errno != 0 && errno != unix.EAGAIN {
				// gVisor opens a queue but cannot read one (ENOSYS): that
				// never was listening.
				return mqErr(errno)
			}
			// Listening from the first read that worked, empty or not.
			f.listening()
			if errno == unix.EAGAIN {
				break
			}
			f.add(buf[:n], "posix mqueue /"+strings.TrimPrefix(name, "/"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(channelTick / 2):
		}
	}
}
