package bwrap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// nsKinds are the namespaces read back from outside.
var nsKinds = []string{"pid", "net", "mnt", "ipc", "uts", "user", "cgroup"}

// outsideNamespaces reads the sandbox's namespaces from the host: the
// /proc/<pid>/ns links of the session's init, found through the session's
// cgroup. This is the kernel's word, not the probe's, so a lying probe can
// neither invent nor hide a shared namespace. The init is the sandbox's own
// command: every command of the session runs in what it runs in.
func (s *session) outsideNamespaces(ctx context.Context) (map[string]string, error) {
	if s.cg == nil {
		return nil, errors.New("no cgroup v2: the sandbox's processes cannot be found from outside")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pid := findInCgroup(filepath.Base(s.cg.dir), InitPath)
	if pid == 0 {
		return nil, errors.New("the session's init was not found in its cgroup")
	}
	out := map[string]string{}
	for _, k := range nsKinds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, k)); err == nil {
			out[k] = l
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("could not read /proc/%d/ns", pid)
	}
	return out, nil
}

// findInCgroup returns a process in the cgroup named cg (its last path
// element) whose executable is exe (as the process itself sees the path).
func findInCgroup(cg, exe string) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if l, err := os.Readlink(d + "/exe"); err != nil || (l != exe && l != exe+" (deleted)") {
			continue
		}
		b, err := os.ReadFile(d + "/cgroup")
		if err != nil || !inCgroup(string(b), cg) {
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(d), "%d", &pid); err == nil {
			return pid
		}
	}
	return 0
}

// inCgroup reports whether a /proc/PID/cgroup text puts the process in the
// v2 cgroup named cg or below it.
func inCgroup(text, cg string) bool {
	for _, line := range strings.Split(text, "\n") {
		p, ok := strings.CutPrefix(line, "0::")
		if ok && (strings.HasSuffix(p, "/"+cg) || strings.Contains(p, "/"+cg+"/")) {
			return true
		}
	}
	return false
}
