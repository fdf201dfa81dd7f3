// Package cgroupfs finds the cgroup v2 hierarchy: hosts mount it at
// /sys/fs/cgroup or, in hybrid setups, at /sys/fs/cgroup/unified.
package cgroupfs

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// Mount is where the cgroup v2 hierarchy's root is mounted; "" when it
// is not.
func Mount() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS ... - FSTYPE SOURCE SUPER
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		if fields := strings.Fields(pre); len(fields) >= 5 && fields[3] == "/" {
			return fields[4]
		}
	}
	return ""
}

// Dir is the folder of a cgroup given by its path from the root (as
// /proc/PID/cgroup and monitors name it); "" without a v2 mount.
func Dir(path string) string {
	m := Mount()
	if m == "" {
		return ""
	}
	return filepath.Join(m, filepath.Clean("/"+path))
}
