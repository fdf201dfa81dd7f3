package probe

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// remountKeep are per-mount flags a remount must repeat: the kernel refuses
// to clear them in a user namespace, and dropping them is not the point.
var remountKeep = map[string]uintptr{
	"nosuid": unix.MS_NOSUID, "nodev": unix.MS_NODEV, "noexec": unix.MS_NOEXEC,
	"noatime": unix.MS_NOATIME, "nodiratime": unix.MS_NODIRATIME, "relatime": unix.MS_RELATIME,
}

// remountFlags are the flags that make a read-only mount read-write and
// keep the rest. MS_BIND limits the change to this mount point in this
// mount namespace: without it MS_REMOUNT would change the file system's
// own (superblock) flags, for every namespace that mounts it.
func remountFlags(opts string) uintptr {
	f := uintptr(unix.MS_REMOUNT | unix.MS_BIND)
	for _, o := range strings.Split(opts, ",") {
		f |= remountKeep[o]
	}
	return f
}

// takeDownRemount makes every read-only mount of the probe's own mount
// namespace read-write. It writes nothing through them.
func takeDownRemount(s wire.Step, l *tdLog) error {
	if err := ownNamespace("mnt", s.Outside); err != nil {
		l.add(wire.TakedownSkipped, "%v", err)
		return err
	}
	ms, err := readMounts()
	if err != nil {
		l.result("read the mount table", err)
		return nil
	}
	refused := map[string][]string{} // error -> mount points
	n := 0
	for _, m := range ms {
		if !m.RO {
			continue
		}
		n++
		err := unix.Mount("", m.Point, "", remountFlags(m.Opts), "")
		switch {
		case err == nil:
			l.add(wire.TakedownChanged, "remounted %s (%s) read-write", m.Point, m.FSType)
		case kernelRefusal(err):
			refused[err.Error()] = append(refused[err.Error()], m.Point)
		default:
			l.add(wire.TakedownFailed, "remount %s read-write: %v", m.Point, err)
		}
	}
	for _, e := range sortedKeys(refused) {
		pts := refused[e]
		shown := pts
		if len(shown) > 12 {
			shown = append(shown[:12:12], fmt.Sprintf("and %d more", len(pts)-12))
		}
		l.add(wire.TakedownRefused, "remount read-write %s: %s", strings.Join(shown, " "), e)
	}
	if n == 0 {
		l.add(wire.TakedownUnchanged, "no read-only mount in this namespace")
	}
	return nil
}

// takedownSysctls are network sysctls of the probe's own namespace and the
// value that loosens each: forwarding on, IPv6 back on where the runtime
// turned it off.
var takedownSysctls = []struct{ Path, Want string }{
	{"/proc/sys/net/ipv4/ip_forward", "1"},
	{"/proc/sys/net/ipv6/conf/all/disable_ipv6", "0"},
	{"/proc/sys/net/ipv6/conf/default/disable_ipv6", "0"},
}

// takeDownSysctl writes them. /proc/sys/net is per network namespace, so
// the write can only reach the probe's own, which ownNamespace checked.
func takeDownSysctl(s wire.Step, l *tdLog) error {
	if err := ownNamespace("net", s.Outside); err != nil {
		l.add(wire.TakedownSkipped, "%v", err)
		return err
	}
	for _, c := range takedownSysctls {
		name := strings.ReplaceAll(strings.TrimPrefix(c.Path, "/proc/sys/"), "/", ".")
		writeKernelFile(l, name, c.Path, c.Want, unix.PROC_SUPER_MAGIC)
	}
	return nil
}

// writeKernelFile sets path to want unless it already holds it, and only
// if the file opened is on a file system of type magic: a look-alike
// planted elsewhere is not the kernel's.
func writeKernelFile(l *tdLog, name, path, want string, magic ...int64) {
	cur, err := readFirstLine(path)
	if errors.Is(err, os.ErrNotExist) {
		l.add(wire.TakedownUnchanged, "%s: not present", name)
		return
	}
	if err == nil && cur == want {
		l.add(wire.TakedownUnchanged, "%s is already %s", name, want)
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		l.result(fmt.Sprintf("set %s to %s (was %s)", name, want, cur), err)
		return
	}
	defer f.Close()
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil || !oneOf(int64(st.Type), magic) {
		l.add(wire.TakedownSkipped, "%s: not a kernel file, left alone", name)
		return
	}
	_, err = f.WriteString(want)
	l.result(fmt.Sprintf("set %s to %s (was %s)", name, want, cur), err)
}

func oneOf(v int64, set []int64) bool {
	for _, s := range set {
		if v == s {
			return true
		}
	}
	return false
}

// cgroupLimits are the limit files of the probe's own cgroup and the value
// that lifts each (v2 names, then v1 controller/file).
var cgroupLimits = []struct{ Controller, File, Want string }{
	{"", "pids.max", "max"},
	{"", "memory.max", "max"},
	{"pids", "pids.max", "max"},
	{"memory", "memory.limit_in_bytes", "-1"},
}

// takeDownCgroup lifts the limits of the cgroup the probe itself is in.
// A folder counts as its own only when its cgroup.procs lists the probe:
// a cgroup file system bound from the host shows other cgroups at the
// same paths, and those are never touched.
func takeDownCgroup(s wire.Step, l *tdLog) error {
	for _, kind := range []string{"cgroup", "mnt"} {
		if err := ownNamespace(kind, s.Outside); err != nil {
			l.add(wire.TakedownSkipped, "%v", err)
			return err
		}
	}
	paths, err := ownCgroups()
	if err != nil {
		l.result("read /proc/self/cgroup", err)
		return nil
	}
	tried := 0
	for _, c := range cgroupLimits {
		p, ok := paths[c.Controller]
		if !ok {
			continue
		}
		roots := []string{"/sys/fs/cgroup/" + c.Controller}
		if c.Controller == "" {
			roots = []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}
		}
		for _, root := range roots {
			dir := filepath.Join(root, p)
			if _, err := os.Stat(filepath.Join(dir, c.File)); err != nil {
				continue
			}
			tried++
			if !listsPid(filepath.Join(dir, "cgroup.procs"), os.Getpid()) {
				l.add(wire.TakedownSkipped, "%s: not the probe's own cgroup (its cgroup.procs does not list it)", dir)
				continue
			}
			writeKernelFile(l, filepath.Join(dir, c.File), filepath.Join(dir, c.File), c.Want, unix.CGROUP_SUPER_MAGIC, unix.CGROUP2_SUPER_MAGIC)
		}
	}
	if tried == 0 {
		l.add(wire.TakedownUnchanged, "no limit file of the probe's cgroup is visible (no cgroup file system mounted, or no limits)")
	}
	return nil
}

// ownCgroups maps controller ("" for the v2 hierarchy) -> the probe's
// cgroup path, from /proc/self/cgroup ("ID:CONTROLLERS:PATH" lines).
func ownCgroups() (map[string]string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		// A path with ".." points above the probe's cgroup namespace: never
		// the probe's to change.
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "/") || strings.Contains(parts[2], "..") {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, nil
}

func listsPid(procs string, pid int) bool {
	b, err := os.ReadFile(procs)
	if err != nil {
		return false
	}
	want := strconv.Itoa(pid)
	for _, f := range strings.Fields(string(b)) {
		if f == want {
			return true
		}
	}
	return false
}
