package probe

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// maxWritable bounds how many mount points "dir:@writable" uses.
const maxWritable = 64

// dirsOf expands the folder part of a "dir:" channel into the folders a
// send writes to and a receive polls:
//   - "@writable" is every writable mount point of the sandbox's own mount
//     table (see writableMounts): a careless bind of a shared host folder
//     shows up there whatever path it was given;
//   - "$HOME" and "$UID" are the agent's home and uid (/run/user/$UID);
//   - a folder ending in "/.." is the parent of where the folder before it
//     really is (symlinks followed): the parent of the workspace, which a
//     platform may share between sessions;
//   - anything else is itself.
func dirsOf(where string) ([]string, error) {
	if where == "@writable" {
		return writableMounts()
	}
	where = os.Expand(where, func(k string) string {
		switch k {
		case "HOME":
			return homeDir()
		case "UID":
			return strconv.Itoa(os.Getuid())
		}
		return "$" + k
	})
	if base, ok := strings.CutSuffix(where, "/.."); ok {
		if real, err := filepath.EvalSymlinks(base); err == nil {
			base = real
		}
		return []string{filepath.Dir(filepath.Clean(base))}, nil
	}
	return []string{filepath.Clean(where)}, nil
}

// writableMounts lists the sandbox's writable mount points that are
// folders, from /proc/self/mountinfo: kernel-state file systems, /proc,
// /sys, /dev (but for /dev/shm) and the probe's own folder left out.
func writableMounts() ([]string, error) {
	ms, err := readMounts()
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, m := range ms {
		p := filepath.Clean(m.Point)
		if m.RO || pseudoFS[m.FSType] || seen[p] || !writableCandidate(p) {
			continue
		}
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			continue // a bound file (/etc/resolv.conf), or gone
		}
		seen[p] = true
		out = append(out, p)
		if len(out) == maxWritable {
			break
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no writable mount point in the mount table")
	}
	return out, nil
}

func writableCandidate(p string) bool {
	under := func(root string) bool { return p == root || strings.HasPrefix(p, root+"/") }
	switch {
	case under("/dev/shm"):
		return true
	case under("/proc"), under("/sys"), under("/dev"), under(probeHome):
		return false
	}
	return true
}
