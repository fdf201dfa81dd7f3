package probe

import (
	"context"
	"errors"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/posixmq"
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

// sendMq puts the value on the peer's queue, if this session can see it.
// It never creates the queue: one only the sender sees would hold the
// value where nobody else can read it, and outlive the attempt.
func sendMq(name, v string) error {
	fd, err := posixmq.Open(name, unix.O_WRONLY|unix.O_NONBLOCK, nil)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return posixmq.Send(fd, []byte("GATEHOUSE "+v+"\n"))
}

// receiveMq makes its own queue, open to any user (the peer may map to
// another uid), reads it every tick until ctx ends, and removes it.
func receiveMq(ctx context.Context, name string, f *found) error {
	attr := posixmq.Attr{MaxMsg: mqMsgs, MsgSize: mqMsgSize}
	fd, err := posixmq.Open(name, unix.O_RDONLY|unix.O_CREAT|unix.O_NONBLOCK, &attr)
	if err != nil {
		return err
	}
	defer posixmq.Unlink(name)
	defer unix.Close(fd)
	_ = unix.Fchmod(fd, 0o666) // the umask took the others' write bit
	buf := make([]byte, mqReadBuf)
	for {
		for {
			n, err := posixmq.Receive(fd, buf)
			if err != nil && !errors.Is(err, unix.EAGAIN) {
				// gVisor opens a queue but cannot read one (ENOSYS): that
				// never was listening.
				return err
			}
			// Listening from the first read that worked, empty or not.
			f.listening()
			if err != nil {
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
