package docker_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
	// A live process of the test's own, not the test binary: its pid names
	// the package's lab daemon's state folder (TestMain).
	alive := exec.Command("sleep", "300")
	if err := alive.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = alive.Process.Kill(); _ = alive.Wait() })
	stale := fmt.Sprintf("/run/ghd-%x", dead.Process.Pid)
	live := fmt.Sprintf("/run/ghd-%x", alive.Process.Pid)
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
	// The dead daemon's containerd shim, and one of the live daemon's.
	staleShim := fakeShim(t, stale)
	liveShim := fakeShim(t, live)
	reaped, err := docker.ReapStale(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-staleShim:
	case <-time.After(10 * time.Second):
		t.Errorf("the dead daemon's containerd shim still runs")
	}
	select {
	case <-liveShim:
		t.Errorf("a live daemon's containerd shim was killed")
	default:
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

// addNetns makes a namespace with lo up, for a stale daemon's record.
func addNetns(ctx context.Context) (string, error) {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "gh-d" + hex.EncodeToString(b)
	if out, err := exec.CommandContext(ctx, "ip", "netns", "add", name).CombinedOutput(); err != nil {
		return "", fmt.Errorf("ip netns add: %v: %s", err, out)
	}
	if out, err := exec.CommandContext(ctx, "ip", "-n", name, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		_ = exec.Command("ip", "netns", "del", name).Run()
		return "", fmt.Errorf("lo up: %v: %s", err, out)
	}
	return name, nil
}

const fakeShimVerb = "gh-fake-containerd-shim"

// fakeShim starts this test binary, linked or copied under the name of a
// containerd shim, with the -address a shim of the daemon whose state
// folder is dir has. The channel closes when it exits.
func fakeShim(t *testing.T, dir string) <-chan struct{} {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "containerd-shim-runc-v2")
	if err := os.Link(self, bin); err != nil {
		b, err := os.ReadFile(self)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, fakeShimVerb, "-namespace", "moby", "-address", filepath.Join(dir, "x", "containerd", "containerd.sock"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	return done
}
