package hostproc

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrNotIt means a pid names a process, but not the one meant (not in the
// session's cgroup, not in its namespace): its number was taken over.
var ErrNotIt = errors.New("the pid is not the process meant")

// SignalIf sends sig to pid only if it is the process meant: pinned
// first, then checked by is (reading the pinned process's /proc folder,
// see Read), then signalled through the pidfd. A pid listed a moment ago
// (a cgroup's, a namespace's, a daemon's answer) whose process exited and
// whose number went to another is never signalled.
func SignalIf(pid int, sig unix.Signal, is func(dir string) (bool, error)) error {
	p, err := Pin(pid)
	if err != nil {
		return err
	}
	defer p.Close()
	ok := false
	if err := p.Read(func(dir string) error {
		var err error
		ok, err = is(dir)
		return err
	}); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("hostproc: pid %d: %w", pid, ErrNotIt)
	}
	return p.Signal(sig)
}

// SignalGroup sends sig to the process group the pinned process leads,
// through its pidfd (PIDFD_SIGNAL_PROCESS_GROUP, Linux 6.9): its group,
// even once it was reaped, never one that took its number over. On an
// older kernel the group is signalled by number only while the pinned
// process is alive from before to after the call: its number, and so the
// group's, was never free meanwhile.
func (p *Proc) SignalGroup(sig unix.Signal) error {
	p.mu.Lock()
	if p.fd < 0 {
		p.mu.Unlock()
		return fmt.Errorf("hostproc: pid %d: %w", p.PID, ErrGone)
	}
	err := unix.PidfdSendSignal(p.fd, sig, nil, unix.PIDFD_SIGNAL_PROCESS_GROUP)
	p.mu.Unlock()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("hostproc: group %d: %w", p.PID, ErrGone)
	case !errors.Is(err, unix.EINVAL):
		return fmt.Errorf("hostproc: signal group %d: %w", p.PID, err)
	}
	return p.Read(func(string) error { return unix.Kill(-p.PID, sig) })
}

// InCgroup is a check for SignalIf: the process is in the cgroup at rel
// (its path from the v2 root, as /proc/PID/cgroup names it) or below it.
func InCgroup(rel string) func(string) (bool, error) {
	rel = filepath.Clean("/" + rel)
	return func(proc string) (bool, error) {
		b, err := readSmall(filepath.Join(proc, "cgroup"), 64<<10)
		if err != nil {
			return false, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if p, ok := strings.CutPrefix(line, "0::"); ok {
				return p == rel || strings.HasPrefix(p, rel+"/"), nil
			}
		}
		return false, nil
	}
}

// InNetns is a check for SignalIf: the process is in the network
// namespace with this device and inode.
func InNetns(dev, ino uint64) func(string) (bool, error) {
	return func(proc string) (bool, error) {
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(proc, "ns", "net"), &st); err != nil {
			return false, err
		}
		return uint64(st.Dev) == dev && st.Ino == ino, nil
	}
}

// PinChild pins a child the caller started and has not waited for yet:
// its pid cannot be reused before that wait, so the pidfd is its, exited
// (a zombie) or not. For signalling it and its group after it was reaped,
// through the pidfd.
func PinChild(pid int) (*Proc, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("hostproc: pin child %d: pidfd_open: %w", pid, err)
	}
	unix.CloseOnExec(fd)
	st, _ := ReadStat(pid) // a zombie's too
	return &Proc{PID: pid, Start: st.Start, fd: fd}, nil
}
