package probe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// procScan bounds how many processes one look at /proc reads: a sandbox
// that shares the host's pid namespace shows every host process.
const procScan = 4096

// procFile checks a "proc:" channel's file name: only the two a process
// exposes its value through.
func procFile(which string) error {
	if which != "environ" && which != "cmdline" {
		return fmt.Errorf("proc channel %q: want environ or cmdline", which)
	}
	return nil
}

// eachProc calls fn with the pid and the head of /proc/PID/WHICH of every
// process but the probe itself. It fails only when /proc cannot be listed.
func eachProc(which string, fn func(pid int, b []byte)) error {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	self, n := os.Getpid(), 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if n++; n > procScan {
			break
		}
		if b, err := readLimited("/proc/"+e.Name()+"/"+which, searchFileHead); err == nil {
			fn(pid, b)
		}
	}
	return nil
}

// offeredInProc is a send on a proc channel: the value is offered by the
// session's holder process (the harness starts it with the value in its
// argv and environment); the try succeeds when the probe sees such a
// process in its own /proc, so the offer is known to be real.
func offeredInProc(which, v string) error {
	if err := procFile(which); err != nil {
		return err
	}
	seen := false
	err := eachProc(which, func(_ int, b []byte) {
		seen = seen || bytes.Contains(b, []byte(v))
	})
	if err == nil && !seen {
		err = errors.New("no process of this session shows its value in /proc/PID/" + which)
	}
	return err
}

// receiveProc reads every other process's environ or cmdline each tick:
// a pid namespace shared with another session shows that session's
// processes, and their values with them (cmdline is readable by anyone;
// environ needs ptrace read access).
func receiveProc(ctx context.Context, which string, f *found) error {
	if err := procFile(which); err != nil {
		return err
	}
	for {
		err := eachProc(which, func(pid int, b []byte) {
			f.add(bytes.ReplaceAll(b, []byte{0}, []byte{'\n'}), "/proc/"+strconv.Itoa(pid)+"/"+which)
		})
		if err != nil && f.from.IsZero() {
			return err
		}
		f.listening()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(channelTick):
		}
	}
}
