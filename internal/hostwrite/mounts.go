package hostwrite

import (
	"bufio"
	"bytes"
	"path"
	"strconv"
	"strings"
)

// MaxMounts bounds the mount table read of one namespace: a sandbox has a
// few dozen mounts, a host a few hundred; one that made thousands gets
// the first of them.
const MaxMounts = 2000

// Mount is one line of a mountinfo file.
type Mount struct {
	Dev    string // "major:minor" of its file system
	Root   string // the folder of that file system it shows
	Point  string // where it is mounted
	FSType string
	RW     bool
}

// ParseMountinfo reads /proc/PID/mountinfo text (as the kernel writes it:
// octal escapes for blanks, one mount a line), at most MaxMounts mounts.
func ParseMountinfo(b []byte) []Mount {
	var out []Mount
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() && len(out) < MaxMounts {
		f := strings.Fields(sc.Text())
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || len(f) < sep+2 {
			continue
		}
		m := Mount{Dev: f[2], Root: unescape(f[3]), Point: unescape(f[4]), FSType: f[sep+1]}
		m.RW = strings.Split(f[5], ",")[0] == "rw"
		if !path.IsAbs(m.Point) {
			continue
		}
		m.Point = path.Clean(m.Point)
		if path.IsAbs(m.Root) {
			m.Root = path.Clean(m.Root)
		} // else a namespace handle's "net:[...]": it maps to no folder
		out = append(out, m)
	}
	return out
}

// unescape undoes the kernel's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// KernelFS are file systems that hold kernel state, not files: nothing the
// probe writes lands in one (it refuses to), and a namespace handle (nsfs)
// is never a folder to write in.
var KernelFS = map[string]bool{
	"proc": true, "sysfs": true, "devpts": true, "mqueue": true, "cgroup": true, "cgroup2": true,
	"debugfs": true, "tracefs": true, "securityfs": true, "bpf": true, "pstore": true,
	"efivarfs": true, "binfmt_misc": true, "autofs": true, "fusectl": true, "configfs": true,
	"nsfs": true, "selinuxfs": true, "rpc_pipefs": true, "hugetlbfs": true,
}

// under says whether p is root or below it.
func under(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

// rel is p below root ("" for root itself).
func rel(p, root string) string {
	if p == root {
		return ""
	}
	if root == "/" {
		return strings.TrimPrefix(p, "/")
	}
	return strings.TrimPrefix(p, root+"/")
}

// holding is the mount a path is on: the deepest mount point above it,
// the last mounted of those at one point (the one on top).
func holding(ms []Mount, p string) (Mount, bool) {
	best, found := Mount{}, false
	for _, m := range ms {
		if !under(p, m.Point) {
			continue
		}
		if !found || len(m.Point) >= len(best.Point) {
			best, found = m, true
		}
	}
	return best, found
}
