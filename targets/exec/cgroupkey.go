package exec

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
)

// cgroupKey is a cgroup folder's id as the kernel reports it to monitors
// (bpf_get_current_cgroup_id: the inode of its folder in cgroupfs) and its
// path as /proc/PID/cgroup names it (from the cgroup v2 root).
func cgroupKey(dir string) (uint64, string, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return 0, "", err
	}
	mnt := cgroup2Mount()
	if mnt == "" {
		return 0, "", errors.New("no cgroup v2 mount")
	}
	rel, err := filepath.Rel(mnt, dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		return 0, "", errors.New("cgroup folder outside the cgroup v2 mount")
	}
	return st.Ino, "/" + rel, nil
}
