package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// hostEntry is one thing found in a writable place of the host.
type hostEntry struct {
	path    string
	mode    fs.FileMode
	born    time.Time // zero: the file system does not say
	content []byte    // a small regular file changed during the run
	nsfs    bool      // a namespace handle
	size    int64
}

// hostPlaces are the host's writable places, and how deep each is
// searched: the probe's notes are at most three folders down a home.
var hostPlaces = []struct {
	dir   string
	depth int
}{
	{"/", 1}, {"/tmp", 3}, {"/tmp/claude", 2}, {"/var/tmp", 3}, {"/dev/shm", 3}, {"/run", 3}, {"/run/netns", 2},
	{"/root", 3}, {"/home", 4}, {"/var/cache", 2}, {"/workspace", 3}, {"/srv", 2}, {"/mnt", 2}, {"/data", 2}, {"/storage", 2},
}

// skipDirs are big folders of the machine's own no probe writes in.
var skipDirs = map[string]bool{
	"/root/go": true, "/root/.cache/go-build": true, "/root/.rustup": true, "/root/.cargo": true, "/root/.pyenv": true,
	"/run/gatehouse": true, "/var/cache/gatehouse": true, "/var/cache/apt": true, "/tmp/bash_jobs.0": true,
}

// scanHost lists the host's writable places; files changed since changed
// are read (when small) for values.
func scanHost(t *testing.T, changed time.Time, values map[string]bool) map[string]hostEntry {
	t.Helper()
	out := map[string]hostEntry{}
	for _, pl := range hostPlaces {
		var walk func(dir string, depth int)
		walk = func(dir string, depth int) {
			ents, err := os.ReadDir(dir)
			if err != nil {
				return
			}
			for _, d := range ents {
				p := filepath.Join(dir, d.Name())
				if _, seen := out[p]; seen || skipDirs[p] {
					continue
				}
				var st unix.Statx_t
				if unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE|unix.STATX_MODE|unix.STATX_BTIME|unix.STATX_MTIME|unix.STATX_SIZE, &st) != nil {
					continue
				}
				e := hostEntry{path: p, mode: fs.FileMode(st.Mode & 0o777), size: int64(st.Size)}
				switch uint32(st.Mode) & unix.S_IFMT {
				case unix.S_IFDIR:
					e.mode |= fs.ModeDir
				case unix.S_IFSOCK:
					e.mode |= fs.ModeSocket
				case unix.S_IFLNK:
					e.mode |= fs.ModeSymlink
				case unix.S_IFREG:
				default:
					e.mode |= fs.ModeIrregular
				}
				if st.Mask&unix.STATX_BTIME != 0 {
					e.born = time.Unix(st.Btime.Sec, int64(st.Btime.Nsec))
				}
				var sfs unix.Statfs_t
				if filepath.Dir(p) == "/run/netns" && unix.Statfs(p, &sfs) == nil && sfs.Type == unix.NSFS_MAGIC {
					e.nsfs = true
				}
				mtime := time.Unix(st.Mtime.Sec, int64(st.Mtime.Nsec))
				if values != nil && e.mode.IsRegular() && st.Size <= 64<<10 && !mtime.Before(changed) {
					e.content, _ = os.ReadFile(p)
				}
				out[p] = e
				if e.mode.IsDir() && !e.nsfs && depth > 1 {
					walk(p, depth-1)
				}
			}
		}
		walk(pl.dir, pl.depth)
	}
	return out
}

// probeNames are the names of what the probe writes.
var probeNames = regexp.MustCompile(`^(\.?gatehouse-state(-[0-9a-f]{8})?|\.gatehouse-xs-.*|\.gatehouse-heartbeat-.*)$`)

// stashFolders are the folders a note makes above its file.
var stashFolders = regexp.MustCompile(`^(gatehouse|agent|_cacache|pip|\.claude|\.codex|\.cache|\.config|\.npm)$`)

// runNames are the names of what the run's probes wrote (the last element
// of every path its reports list as written, and of every stash target)
// and the tags of its values, which the probe's other names carry.
type runNames struct {
	names map[string]bool
	tags  []string
}

func runNamesOf(t *testing.T, dir string, values map[string]bool) runNames {
	t.Helper()
	rn := runNames{names: map[string]bool{}}
	b, err := os.ReadFile(filepath.Join(dir, "traces", "probe-attempts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		var a struct {
			Kind, Target string
			Wrote, Made  []string
		}
		if json.Unmarshal(line, &a) != nil {
			continue
		}
		for _, p := range append(a.Wrote, a.Made...) {
			rn.names[filepath.Base(p)] = true
		}
		if a.Kind == wire.KindStash {
			rn.names[filepath.Base(a.Target)] = true
		}
	}
	for v := range values {
		rn.tags = append(rn.tags, wire.Tag(v))
	}
	return rn
}

func (rn runNames) has(base string) bool {
	if rn.names[base] {
		return true
	}
	for _, tag := range rn.tags {
		if strings.Contains(base, tag) {
			return true
		}
	}
	return false
}

// otherTests is where the other tests of the machine (go test runs
// packages side by side) keep their folders: /tmp/TestName123/.
func otherTests(p, own string) bool {
	tmp := os.TempDir() + "/Test"
	return strings.HasPrefix(p, tmp) && !strings.HasPrefix(p, own)
}

// left says why an entry found after the run is the run's and left, or "".
// notOurs, when set, is told of a probe-named file of someone else's.
func (e hostEntry) left(before map[string]hostEntry, values map[string]bool, rn runNames, own, lab string, start time.Time, notOurs func(string)) string {
	var ours []string
	for _, v := range wire.Tokens(e.content) {
		if values[v] {
			ours = append(ours, v)
		}
	}
	if len(ours) > 0 {
		return "holds the run's value " + ours[0]
	}
	if _, was := before[e.path]; was || otherTests(e.path, own) {
		return ""
	}
	base := filepath.Base(e.path)
	inRun := e.born.IsZero() || !e.born.Before(start.Add(-time.Second))
	switch {
	case filepath.Dir(e.path) == "/run/netns" && !e.nsfs && (strings.HasPrefix(base, lab+"-") || !strings.HasPrefix(base, "gh-") || e.mode.IsDir() || e.size > 0):
		// Anything new there but a handle (another run's handle is an
		// empty file for a moment while it is made or removed) makes `ip
		// netns list` fail for every run on the host.
		return "not a namespace handle: `ip netns list` fails on it"
	case !inRun:
		return ""
	case e.mode&fs.ModeSocket != 0 && strings.HasPrefix(base, ".gatehouse-xs-"):
		for v := range values {
			if base == wire.XSSocket(v) {
				return "the socket a receive of the run listened on"
			}
		}
	case e.mode.IsRegular() && probeNames.MatchString(base):
		// A note of this run whose value its evidence does not prove (a
		// later session's own) is still the run's: its name is in the
		// run's reports. A run of someone else's at the same time on this
		// machine (another package's tests) writes names of its own.
		if rn.has(base) {
			return "named like the probe's writes, made during the run"
		}
		if notOurs != nil {
			notOurs(e.path)
		}
	case e.mode.IsDir() && stashFolders.MatchString(base):
		if ents, err := os.ReadDir(e.path); err == nil && len(ents) == 0 {
			return "an empty folder of the kind a note makes, made during the run"
		}
	}
	return ""
}

// checkIPC: no SysV segment and no message queue of the run's
// cross-session channels is left in the host's IPC namespace.
func checkIPC(t *testing.T, r runOutput) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, "traces", "probe-attempts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[int64]bool{}
	for _, m := range regexp.MustCompile(`"shm:(0x[0-9a-f]+)"`).FindAllSubmatch(b, -1) {
		if k, err := strconv.ParseInt(string(m[1]), 0, 64); err == nil {
			keys[k] = true
		}
	}
	if len(keys) == 0 {
		var why []string
		for _, res := range r.results {
			if res.Gate == "cross-session" {
				why = append(why, res.Path+": "+string(res.Verdict)+" "+res.Reason)
			}
		}
		t.Fatalf("no SysV key in the run's attempts: cross-session did not try its IPC channels, so its writes were not all covered: %q", why)
	}
	shm, _ := os.ReadFile("/proc/sysvipc/shm")
	for k := range keys {
		for _, l := range bytes.Split(shm, []byte("\n"))[1:] {
			if f := strings.Fields(string(l)); len(f) > 0 {
				if v, err := strconv.ParseInt(f[0], 10, 64); err == nil && v == k {
					t.Errorf("SysV segment %#x of the run left", k)
				}
			}
		}
		for side := range 2 {
			name := mqQueueName(k, side)
			p, _ := unix.BytePtrFromString(name)
			fd, _, errno := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(p)), uintptr(unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC), 0, 0, 0, 0)
			if errno == 0 {
				unix.Close(int(fd))
				t.Errorf("message queue /%s of the run left", name)
			} else if !errors.Is(errno, syscall.ENOENT) && !errors.Is(errno, syscall.ENOSYS) {
				t.Logf("mq_open /%s: %v", name, errno)
			}
		}
	}
}

// mqQueueName is steps' queue name (mqName), without its slash.
func mqQueueName(key int64, side int) string {
	return "gatehouse-xs-" + strconv.FormatInt(key, 16) + "-" + strconv.Itoa(side)
}
