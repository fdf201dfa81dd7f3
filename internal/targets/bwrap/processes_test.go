package bwrap_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
)

// A process that made a network namespace of its own is invisible to a
// scan of the session's namespace but still listed by Processes (the
// session's cgroup); after Reap nothing is listed.
func TestProcessesSeesWhatLeftTheNetworkNamespace(t *testing.T) {
	needSandbox(t)
	p := shipped(t, profiles.Leaky)
	n := newNetns(t)
	s, _ := startSession(t, p, targets.Spec{Name: "procs", Path: targets.PathNormal, Network: n})
	lister, ok := s.(targets.ProcessLister)
	if !ok {
		t.Fatal("bwrap session does not list its processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	res, err := s.Exec(ctx, targets.Command{Args: []string{"sh", "-c",
		"unshare -rn sh -c 'readlink /proc/self/ns/net; exec sleep 305 >/dev/null 2>&1' & sleep 0.3"}, Stdout: &out, Stderr: &out})
	if err != nil || res.ExitCode != 0 {
		t.Skipf("nested user+network namespace not available here: %v %d %s", err, res.ExitCode, out.String())
	}
	pids, err := lister.Processes(ctx)
	if err != nil {
		t.Skipf("no cgroup v2 here: %v", err)
	}
	escaped := 0
	for _, pid := range pids {
		exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
		if filepath.Base(exe) == "sleep" && !sameNet(pid, n.NetnsPath) {
			escaped++
		}
	}
	if escaped != 1 {
		t.Fatalf("want the sleep in its own network namespace listed once, got %d of %v", escaped, pids)
	}
	if err := s.(interface{ Reap(context.Context) error }).Reap(ctx); err != nil {
		t.Fatalf("Reap: %v", err)
	}
	if pids, err := lister.Processes(ctx); err != nil || len(pids) != 0 {
		t.Errorf("after Reap: %v %v", pids, err)
	}
}

// sameNet: is pid in the network namespace at path?
func sameNet(pid int, path string) bool {
	var a, b syscall.Stat_t
	if syscall.Stat("/proc/"+strconv.Itoa(pid)+"/ns/net", &a) != nil {
		return false
	}
	if syscall.Stat(path, &b) != nil {
		return false
	}
	return a.Ino == b.Ino && a.Dev == b.Dev
}
