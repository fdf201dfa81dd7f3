// Package hostproc pins a host process, so that what the harness reads of
// it later from /proc is provably that process's.
//
// A pid alone is no identity. Once a process exits and is reaped the kernel
// hands its number to the next fork, which may be the sandbox's own, and a
// search of /proc by executable name or order finds whatever a sandbox put
// there (a decoy that forked until its pid sorted first). So a target
// identifies a process once, at a moment nothing hostile has run yet (a
// session's Start, before its first command), pins it with a pidfd and its
// start time, and from then on reads it only through Read, which refuses
// once the pinned process is gone instead of reading whoever has the pid.
package hostproc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrGone means the pinned process has exited (or is a zombie): nothing
// read at its pid can be attributed to it any more.
var ErrGone = errors.New("the pinned process is gone")

// Proc is one pinned host process.
type Proc struct {
	PID   int
	Start uint64 // field 22 of /proc/PID/stat: clock ticks after boot

	mu sync.Mutex
	fd int // pidfd; -1 once closed
}

// Pin pins the process that has pid now. The pidfd is opened first and
// checked alive after the start time is read, so the start time is the
// pidfd's process's even if pid was reused meanwhile.
func Pin(pid int) (*Proc, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("hostproc: pin: bad pid %d", pid)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil, fmt.Errorf("hostproc: pin %d: %w", pid, ErrGone)
		}
		return nil, fmt.Errorf("hostproc: pin %d: pidfd_open: %w", pid, err)
	}
	unix.CloseOnExec(fd)
	st, err := ReadStat(pid)
	if err == nil && !st.running() {
		err = ErrGone
	}
	if err == nil && !pidfdAlive(fd) {
		err = ErrGone
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("hostproc: pin %d: %w", pid, err)
	}
	return &Proc{PID: pid, Start: st.Start, fd: fd}, nil
}

// Read calls fn with the process's /proc folder ("/proc/PID") while it is
// the pinned process: alive by its pidfd, not a zombie, and with the pinned
// start time before fn, and still alive after it. A process alive at both
// ends never exited in between, so its pid was never reused and every file
// fn read was its own. Otherwise Read returns ErrGone (wrapped), and the
// caller must drop whatever fn gathered.
func (p *Proc) Read(fn func(dir string) error) error {
	if p == nil {
		return fmt.Errorf("hostproc: no process pinned: %w", ErrGone)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fd < 0 || !pidfdAlive(p.fd) {
		return fmt.Errorf("hostproc: pid %d: %w", p.PID, ErrGone)
	}
	st, err := ReadStat(p.PID)
	if err != nil || st.Start != p.Start || !st.running() {
		return fmt.Errorf("hostproc: pid %d (start %d): %w", p.PID, p.Start, ErrGone)
	}
	dir := "/proc/" + strconv.Itoa(p.PID)
	ferr := fn(dir)
	if !pidfdAlive(p.fd) {
		return fmt.Errorf("hostproc: pid %d exited while read: %w", p.PID, ErrGone)
	}
	return ferr
}

// Alive reports whether the pinned process still runs (not a zombie).
func (p *Proc) Alive() bool {
	return p.Read(func(string) error { return nil }) == nil
}

// Signal sends sig to the pinned process through its pidfd: never to a
// process that took its pid over.
func (p *Proc) Signal(sig unix.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fd < 0 {
		return fmt.Errorf("hostproc: pid %d: %w", p.PID, ErrGone)
	}
	if err := unix.PidfdSendSignal(p.fd, sig, nil, 0); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("hostproc: pid %d: %w", p.PID, ErrGone)
		}
		return fmt.Errorf("hostproc: signal pid %d: %w", p.PID, err)
	}
	return nil
}

// Close releases the pidfd. Safe to call twice, and on nil.
func (p *Proc) Close() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fd < 0 {
		return nil
	}
	err := unix.Close(p.fd)
	p.fd = -1
	return err
}

// pidfdAlive: the pidfd's process has not been reaped (a zombie still
// answers; callers check the state from /proc too).
func pidfdAlive(fd int) bool {
	return unix.PidfdSendSignal(fd, 0, nil, 0) == nil
}

// Stat is what the harness uses of /proc/PID/stat.
type Stat struct {
	State byte   // R, S, D, Z, X, ...
	PPID  int    // field 4
	Start uint64 // field 22
}

func (s Stat) running() bool { return s.State != 'Z' && s.State != 'X' && s.State != 'x' }

// ReadStat reads /proc/PID/stat. The command name (field 2) is the
// process's own choice and may hold spaces and parentheses: fields are
// counted after its last ')'.
func ReadStat(pid int) (Stat, error) {
	b, err := readSmall("/proc/"+strconv.Itoa(pid)+"/stat", 4096)
	if err != nil {
		return Stat{}, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("hostproc: /proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state), f[1] field 4 (ppid), f[19] field 22.
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("hostproc: /proc/%d/stat: %d fields after the command", pid, len(f))
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return Stat{}, fmt.Errorf("hostproc: /proc/%d/stat: bad ppid or start time", pid)
	}
	return Stat{State: f[0][0], PPID: ppid, Start: start}, nil
}

// readSmall reads a /proc file of at most max bytes (ErrTooLarge past it).
func readSmall(name string, max int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("hostproc: %s: over %d bytes", name, max)
	}
	return b, nil
}
