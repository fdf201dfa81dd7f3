package docker_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/cgroupfs"
	"github.com/gatehouse-dev/gatehouse/internal/targets/docker"
)

// TestReapStale: the state folder and namespace of a lab daemon whose
// process is gone are removed; those of a live process are kept.
func TestReapStale(t *testing.T) {
	needLab(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	ns, err := addNetns(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	stale := fmt.Sprintf("/run/ghd-%x", dead.Process.Pid)
	live := fmt.Sprintf("/run/ghd-%x", os.Getpid())
	for _, dir := range []string{stale, live} {
		if err := os.MkdirAll(filepath.Join(dir, "d"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll(stale); os.RemoveAll(live) })
	if err := os.WriteFile(filepath.Join(stale, "netns"), []byte(ns+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A container's init the dead daemon's shim kept running, in a cgroup
	// below the daemon's: seen left behind, populated, after a killed run.
	var orphan *exec.Cmd
	orphanGone := make(chan struct{})
	cg := ""
	if m := cgroupfs.Mount(); m != "" {
		cg = filepath.Join(m, "gatehouse-"+filepath.Base(stale))
		kid := filepath.Join(cg, "container")
		if err := os.MkdirAll(kid, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(kid); os.Remove(cg) })
		orphan = exec.Command("sleep", "600")
		if err := orphan.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = orphan.Process.Kill() })
		go func() { _ = orphan.Wait(); close(orphanGone) }()
		if err := os.WriteFile(filepath.Join(kid, "cgroup.procs"), []byte(strconv.Itoa(orphan.Process.Pid)), 0); err != nil {
			t.Fatal(err)
		}
	}
	reaped, err := docker.ReapStale(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if orphan != nil {
		select {
		case <-orphanGone:
		case <-time.After(10 * time.Second):
			t.Errorf("the container process in the dead daemon's cgroup still runs")
		}
		if _, err := os.Stat(cg); err == nil {
			t.Errorf("the dead daemon's cgroup %s is still there", cg)
		}
	}
	if !slices.Contains(reaped, stale) || slices.Contains(reaped, live) {
		t.Errorf("reaped %v; want %s and not %s", reaped, stale, live)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("%s still there", stale)
	}
	if _, err := os.Stat("/run/netns/" + ns); err == nil {
		t.Errorf("netns %s still there", ns)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live process's state folder was removed: %v", err)
	}
}

// TestReapStaleSparesAnUnrelatedProcess: a stale pid file names a pid that
// now belongs to another process (here a sleep of the test's): ReapStale
// removes the folder and leaves the process alone.
func TestReapStaleSparesAnUnrelatedProcess(t *testing.T) {
	needLab(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	victim := exec.Command("sleep", "300")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = victim.Process.Kill(); _ = victim.Wait() })
	stale := fmt.Sprintf("/run/ghd-%x", dead.Process.Pid)
	if err := os.MkdirAll(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(stale) })
	if err := os.WriteFile(filepath.Join(stale, "dockerd.pid"), []byte(fmt.Sprint(victim.Process.Pid)), 0o600); err != nil {
		t.Fatal(err)
	}
	reaped, err := docker.ReapStale(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(reaped, stale) {
		t.Errorf("reaped %v; want %s", reaped, stale)
	}
	time.Sleep(300 * time.Millisecond)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", victim.Process.Pid))
	if err != nil || strings.Contains(string(b), ") Z ") {
		t.Fatalf("the unrelated process named by the stale pid file was killed (stat %q, %v)", b, err)
	}
}
