package hostproc

import (
	"fmt"
	"os"
)

// maxDepth bounds the parent chain walked from a candidate up to top.
const maxDepth = 32

// FindInit pins the one process among pids that descends from top (the
// process the harness itself started) and runs the executable file exe:
// the same file by device and inode, whatever path the process sees it at
// (a bind mount keeps both). Never by name, never by /proc order.
//
// Call it only while nothing but the runtime and the harness's own init
// runs under top (a session's Start, before its first command): the answer
// is then the harness's, and the pin keeps it so. None, or more than one,
// is an error.
func FindInit(top int, pids []int, exe string) (*Proc, error) {
	want, err := os.Stat(exe)
	if err != nil {
		return nil, fmt.Errorf("hostproc: find init: %w", err)
	}
	var found []*Proc
	for _, pid := range pids {
		p, err := Pin(pid)
		if err != nil {
			continue // gone already: not the init, which answered just now
		}
		match := false
		rerr := p.Read(func(dir string) error {
			got, err := os.Stat(dir + "/exe")
			if err != nil || !os.SameFile(got, want) {
				return nil
			}
			match = Descends(pid, top)
			return nil
		})
		if rerr != nil || !match {
			p.Close()
			continue
		}
		found = append(found, p)
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, fmt.Errorf("hostproc: no process under pid %d runs %s", top, exe)
	}
	var which []int
	for _, p := range found {
		which = append(which, p.PID)
		p.Close()
	}
	return nil, fmt.Errorf("hostproc: %d processes under pid %d run %s (%v): the init is not one", len(found), top, exe, which)
}

// Descends reports whether top is pid's parent, grandparent, ... (or pid
// itself), following /proc's PPid fields at most maxDepth steps.
func Descends(pid, top int) bool {
	for i := 0; i < maxDepth && pid > 1; i++ {
		if pid == top {
			return true
		}
		st, err := ReadStat(pid)
		if err != nil {
			return false
		}
		pid = st.PPID
	}
	return pid == top
}

// SameStart reports whether pid runs now with the given start time: the
// check a record written by an earlier run (a pid file) needs before the
// harness signals that pid.
func SameStart(pid int, start uint64) bool {
	st, err := ReadStat(pid)
	return err == nil && st.Start == start && st.running()
}
