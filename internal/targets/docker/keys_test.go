package docker_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/targets/docker"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// The key a docker session gives the builtin monitor is the cgroup v2
// folder every process of the container runs in — its init and the
// commands exec'd into it — read back here from the host through /proc, on
// this machine's hybrid layout (v1 controllers plus cgroup2 at
// /sys/fs/cgroup/unified). A key naming the shim's or the daemon's cgroup
// would let the monitor see nothing of the session (or everything else).
func TestSessionKeyIsTheContainersCgroup(t *testing.T) {
	needLab(t)
	_, s := start(t, docker.Spec{Runtime: "runc", Network: docker.NetworkNone}, targets.Spec{Name: t.Name()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	keys, err := s.(targets.SessionKeyer).SessionKeys(ctx)
	if err != nil || len(keys) != 1 {
		t.Fatalf("SessionKeys: %+v, %v", keys, err)
	}
	k := keys[0]
	id := s.(interface{ ID() string }).ID()
	if k.ContainerID != id || k.CgroupID == 0 || !strings.Contains(k.CgroupPath, id) {
		t.Fatalf("key %+v: want container %s and the container's own cgroup (its path names the id)", k, id)
	}
	// A command exec'd into the container (the probe's way in) must be in
	// the same cgroup as the init: runc exec joins it.
	done := make(chan struct{})
	go func() {
		defer close(done)
		cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer ccancel()
		_, _ = s.Exec(cctx, targets.Command{Args: []string{"sleep", "3"}})
	}()
	var pids []int
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if pids = containerPids(id); len(pids) >= 2 {
			break
		}
	}
	if len(pids) < 2 {
		t.Fatalf("want the init and the exec'd sleep in the container, got %v", pids)
	}
	for _, pid := range pids {
		ino, rel, lines := v2Cgroup(t, pid)
		t.Logf("pid %d: %s", pid, strings.ReplaceAll(lines, "\n", " | "))
		if ino != k.CgroupID || rel != k.CgroupPath {
			t.Errorf("pid %d is in cgroup v2 %s (id %d); the key says %s (id %d)", pid, rel, ino, k.CgroupPath, k.CgroupID)
		}
	}
	<-done
}

// v2Cgroup is pid's cgroup v2 folder: its inode, its path from the
// cgroup2 root, and the whole /proc/PID/cgroup for the log.
func v2Cgroup(t *testing.T, pid int) (uint64, string, string) {
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
	return st.Ino, rel, strings.TrimSpace(string(b))
}

// containerPids: every process whose cgroup names the container, in any
// hierarchy (the v1 controllers name it even where v2 would not).
func containerPids(id string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/cgroup")
		if err != nil || !strings.Contains(string(b), id) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// The commands the harness itself runs in a session (the exec Inspect
// holds to read the namespaces from outside) are busybox under an applet
// name, on the base image and on a team's own image: run as busybox they
// are a shell to a monitor (rule exec-of-a-shell), and --respond would
// stop the session on Gatehouse's own look inside.
func TestHarnessExecsAreNotShells(t *testing.T) {
	needLab(t)
	ref, err := docker.BaseImage(context.Background(), labDaemon.Host(), docker.BusyboxPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, image, want string
	}{
		{"base image", "", "/bin/sleep "},
		{"own image", ref, "/gatehouse/bin/sleep "},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startLab(t, docker.Spec{Runtime: "runc", Network: docker.NetworkNone, Image: c.image, ReadOnly: true})
			cfg, err := s.Inspect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if e, cl := cfg.Facts["outside.ns.error"], cfg.Facts["outside.cmdline"]; e != "" || !strings.HasPrefix(cl, c.want) || strings.Contains(cl, "busybox") {
				t.Errorf("the held exec ran %q (error %q), want %s… and no busybox", cl, e, c.want)
			}
			if cfg.Facts["inside.kernel"] == "" {
				t.Errorf("no inside facts: %v", cfg.Facts)
			}
		})
	}
}
