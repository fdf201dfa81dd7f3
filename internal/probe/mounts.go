package probe

import (
	"bufio"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// maxMounts bounds the mount table the probe works from; a sandbox has a
// few dozen, a host a few hundred.
const maxMounts = 1000

// mount is one line of /proc/self/mountinfo.
type mount struct {
	Dev    string // the file system's MAJ:MIN, as the mount table names it
	Point  string // where it is mounted, unescaped
	Root   string // which folder of its file system it shows
	FSType string
	RO     bool
	Opts   string // per-mount options (ro,nosuid,...), for a remount that keeps them
}

// readMounts reads the sandbox's mount table.
func readMounts() ([]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() && len(out) < maxMounts {
		if m, ok := parseMountLine(sc.Text()); ok {
			out = append(out, m)
		}
	}
	return out, sc.Err()
}

// parseMountLine reads "ID PARENT MAJ:MIN ROOT POINT OPTS [TAGS] - TYPE SRC SUPEROPTS".
func parseMountLine(line string) (mount, bool) {
	fields := strings.Fields(line)
	sep := -1
	for i, f := range fields {
		if f == "-" && i >= 6 {
			sep = i
			break
		}
	}
	if sep < 0 || len(fields) < sep+2 {
		return mount{}, false
	}
	ro := false
	for _, o := range strings.Split(fields[5], ",") {
		ro = ro || o == "ro"
	}
	return mount{Dev: fields[2], Point: unescapeMount(fields[4]), Root: unescapeMount(fields[3]), FSType: fields[sep+1], RO: ro, Opts: fields[5]}, true
}

// unescapeMount undoes the kernel's octal escapes (\040 for a space).
func unescapeMount(s string) string {
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

// pseudoFS are file systems that hold kernel state, not anyone's files:
// never searched (reading some of their files blocks or costs a lot).
var pseudoFS = map[string]bool{
	"proc": true, "sysfs": true, "devtmpfs": true, "devpts": true, "cgroup": true, "cgroup2": true,
	"mqueue": true, "debugfs": true, "tracefs": true, "securityfs": true, "bpf": true,
	"fusectl": true, "configfs": true, "pstore": true, "hugetlbfs": true, "binfmt_misc": true,
	"autofs": true, "nsfs": true, "efivarfs": true, "selinuxfs": true, "rpc_pipefs": true,
}

// Magic numbers x/sys/unix does not name (linux/magic.h).
const (
	configfsMagic = 0x62656570
	fusectlMagic  = 0x65735543
	mqueueMagic   = 0x19800202
)

// pseudoMagic are the same file systems by statfs magic, for folders
// reached by a path the mount table does not name (/proc/PID/cwd/sys).
var pseudoMagic = map[int64]bool{
	unix.PROC_SUPER_MAGIC: true, unix.SYSFS_MAGIC: true, unix.DEVPTS_SUPER_MAGIC: true,
	unix.CGROUP_SUPER_MAGIC: true, unix.CGROUP2_SUPER_MAGIC: true, unix.DEBUGFS_MAGIC: true,
	unix.TRACEFS_MAGIC: true, unix.SECURITYFS_MAGIC: true, unix.BPF_FS_MAGIC: true,
	configfsMagic: true, unix.PSTOREFS_MAGIC: true, unix.HUGETLBFS_MAGIC: true,
	unix.BINFMTFS_MAGIC: true, unix.NSFS_MAGIC: true, fusectlMagic: true,
	unix.EFIVARFS_MAGIC: true, unix.SELINUX_MAGIC: true, mqueueMagic: true,
}

// isPseudoDir reports whether folder p lies on a kernel-state file system.
func isPseudoDir(p string) bool {
	var s unix.Statfs_t
	return unix.Statfs(p, &s) == nil && pseudoMagic[int64(s.Type)]
}

// systemPoints are where a sandbox shows the distribution's software,
// read-only (bubblewrap's --ro-bind /usr /usr). Such a mount is the
// normal way to give a sandbox its programs, not storage: it is not
// searched (tens of thousands of files) and not host access.
var systemPoints = map[string]bool{"/usr": true, "/lib": true, "/lib32": true, "/lib64": true, "/bin": true, "/sbin": true}

// systemMount: a read-only mount of system software. Either at a system
// point, or below one and showing the same path of its file system
// (--ro-bind /usr/share /usr/share: the host's own /usr/share again, which
// /usr already shows), never a folder from elsewhere bound below /usr.
func systemMount(m mount) bool {
	if !m.RO {
		return false
	}
	if systemPoints[m.Point] {
		return true
	}
	for p := range systemPoints {
		if strings.HasPrefix(m.Point, p+"/") && m.Root == m.Point {
			return true
		}
	}
	return false
}

// systemCopy says where the sandbox also shows a read-only mount's folder
// at a system point ("" when it does not): the same file system (device)
// and a folder inside what a mount there shows (--ro-bind /usr/share
// /opt/share next to --ro-bind /usr /usr; or the host's root file system
// with its own /usr). It is the same software the search skips at /usr by
// rule, and nothing Gatehouse plants or a sandbox writes can be in it
// without also being in /usr. Both mounts must be read-only, no writable
// mount of that file system may show any of it (the sandbox cannot write
// it), and the mount at the system point must really show it there (no
// other mount over it): all checked in the table.
func systemCopy(m mount, ms []mount) string {
	if !m.RO || m.Dev == "" || systemMount(m) {
		return ""
	}
	for _, w := range ms {
		if !w.RO && w.Dev == m.Dev && (within(w.Root, m.Root) || within(m.Root, w.Root)) {
			return ""
		}
	}
	for _, s := range ms {
		if !s.RO || s.Dev != m.Dev || s.Point == m.Point || !within(m.Root, s.Root) {
			continue
		}
		at := path.Join(s.Point, strings.TrimPrefix(m.Root, s.Root))
		if !underSystemPoint(at) || topmost(ms, at).Point != s.Point || topmost(ms, at).Root != s.Root {
			continue
		}
		return at
	}
	return ""
}

// within: p is dir or below it (paths as the mount table gives them).
func within(p, dir string) bool {
	return dir == "/" || p == dir || strings.HasPrefix(p, dir+"/")
}

func underSystemPoint(p string) bool {
	for sp := range systemPoints {
		if within(p, sp) {
			return true
		}
	}
	return false
}

// topmost is the mount that shows path p: the deepest mount point at or
// above it, the last mounted when several share it.
func topmost(ms []mount, p string) mount {
	var best mount
	for _, m := range ms {
		if within(p, m.Point) && len(m.Point) >= len(best.Point) {
			best = m
		}
	}
	return best
}

// skipReason says why no search enters mount m ("" when it is searched).
func skipReason(m mount, ms []mount) string {
	switch {
	case systemMount(m):
		return "read-only system software"
	case m.Point == probeHome || strings.HasPrefix(m.Point, probeHome+"/"):
		return probeOwn
	}
	if at := systemCopy(m, ms); at != "" {
		return "read-only system software (the same folder as " + at + ")"
	}
	return ""
}

// probeOwn is why the probe's folder is not searched.
const probeOwn = "the probe's own files"

// probeHome is the folder the targets put the probe in: its own files.
const probeHome = "/gatehouse"

// notSearched returns the FileIDs of folders no search enters: system
// software (/usr, /lib*, /bin, /sbin) and the probe's own folder. The search checks
// every folder's FileID against it, so the same folder reached by
// another path (/proc/1/root/usr, a host root's /usr) is skipped too.
func notSearched(ms []mount) map[wire.FileID]string {
	out := map[wire.FileID]string{}
	for _, m := range ms {
		why := skipReason(m, ms)
		if why == "" {
			continue
		}
		if id, err := wire.StatID(m.Point); err == nil {
			out[id] = why
		}
	}
	if id, err := wire.StatID(probeHome); err == nil {
		out[id] = probeOwn
	}
	// An image's own /usr (docker: part of the root file system, not a
	// mount) is the distribution's software too.
	for p := range systemPoints {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			if id, err := wire.StatID(p); err == nil && out[id] == "" {
				out[id] = "system software"
			}
		}
	}
	return out
}

// skippedMounts is one line per mount point no search enters by rule
// (besides kernel state and the probe's own), for the report.
func skippedMounts(ms []mount) []string {
	var out []string
	for _, m := range ms {
		why := skipReason(m, ms)
		if why == "" || pseudoFS[m.FSType] || why == probeOwn {
			continue
		}
		out = append(out, "not searched: "+m.Point+": "+why)
	}
	return out
}

// searchPoints lists the mount points worth searching: not kernel state,
// not system software, not the probe's, each once.
func searchPoints(ms []mount) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range ms {
		if pseudoFS[m.FSType] || seen[m.Point] || skipReason(m, ms) != "" {
			continue
		}
		seen[m.Point] = true
		out = append(out, m.Point)
	}
	return out
}
