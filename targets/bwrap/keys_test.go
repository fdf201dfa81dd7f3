package bwrap_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
)

// The keys a session gives monitors are the real ones: the cgroup id is
// the inode of the cgroup folder its processes are in (read from the
// host, through /proc), the namespace inode that of its session netns.
func TestSessionKeysAreTheSessionsCgroupAndNetns(t *testing.T) {
	needSandbox(t)
	n := newNetns(t)
	s, _ := startSession(t, shipped(t, profiles.Leaky), targets.Spec{Name: "keys", Path: targets.PathNormal, Network: n})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	keys, err := s.(targets.SessionKeyer).SessionKeys(ctx)
	if err != nil {
		t.Fatalf("SessionKeys: %v", err)
	}
	if len(keys) != 1 {
		t.Fatalf("want one key, got %+v", keys)
	}
	k := keys[0]
	pids, err := s.(targets.ProcessLister).Processes(ctx)
	if err != nil || len(pids) == 0 {
		t.Skipf("no cgroup v2 here: %v %v", pids, err)
	}
	for _, pid := range pids {
		ino, rel := procCgroup(t, pid)
		if ino != k.CgroupID || rel != k.CgroupPath {
			t.Errorf("pid %d is in cgroup %s (id %d); the key says %s (id %d)", pid, rel, ino, k.CgroupPath, k.CgroupID)
		}
		// Every process of the session carries the session's login uid,
		// the key audit, Falco and Tetragon report.
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/loginuid")
		if err != nil || k.LoginUID == 0 || strings.TrimSpace(string(b)) != strconv.FormatUint(uint64(k.LoginUID), 10) {
			t.Errorf("pid %d has login uid %q (%v); the key says %d", pid, b, err, k.LoginUID)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(n.NetnsPath, &st); err != nil {
		t.Fatal(err)
	}
	if k.CgroupID == 0 || k.NetnsInode != st.Ino {
		t.Errorf("key %+v: want a cgroup id and netns inode %d", k, st.Ino)
	}
}

// procCgroup is pid's cgroup v2 folder from /proc: its inode and path.
func procCgroup(t *testing.T, pid int) (uint64, string) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	rel := ""
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel = p
		}
	}
	mnt := ""
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mi), "\n") {
		pre, post, _ := strings.Cut(line, " - ")
		if f := strings.Fields(pre); strings.HasPrefix(post, "cgroup2 ") && len(f) >= 5 && f[3] == "/" {
			mnt = f[4]
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(mnt, rel), &st); err != nil {
		t.Fatalf("pid %d's cgroup %q under %q: %v", pid, rel, mnt, err)
	}
	return st.Ino, rel
}
