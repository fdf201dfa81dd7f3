package hostsession

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// NetnsID identifies a network namespace by the device and inode of its
// file: it stays valid after the namespace's name is removed.
type NetnsID struct{ Dev, Ino uint64 }

// ReadNetnsID reads the identity of the namespace file at path.
func ReadNetnsID(path string) (NetnsID, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return NetnsID{}, err
	}
	return NetnsID{uint64(st.Dev), st.Ino}, nil
}

// Pids lists the processes (ours aside) whose network namespace is id, as
// `ip netns pids` does.
func (id NetnsID) Pids() ([]int, error) {
	links, err := filepath.Glob("/proc/[0-9]*/ns/net")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, l := range links {
		var st syscall.Stat_t
		if syscall.Stat(l, &st) != nil { // the process may be gone already
			continue
		}
		if uint64(st.Dev) == id.Dev && st.Ino == id.Ino {
			pid, err := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(l))))
			if err == nil && pid != os.Getpid() {
				pids = append(pids, pid)
			}
		}
	}
	return pids, nil
}
