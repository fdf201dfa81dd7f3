package cgroupfs_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/cgroupfs"
)

// A cgroup whose child still holds a process (a container's init a dead
// daemon left) is emptied and removed, child folder first.
func TestRemoveTreeKillsWhatIsLeftAndRemovesEveryFolder(t *testing.T) {
	m := cgroupfs.Mount()
	if os.Geteuid() != 0 || m == "" {
		t.Skip("needs root and a cgroup v2 mount")
	}
	dir := filepath.Join(m, "gatehouse-test-"+strconv.Itoa(os.Getpid()))
	kid := filepath.Join(dir, "container")
	if err := os.MkdirAll(kid, 0o755); err != nil {
		t.Skipf("cannot make a cgroup here: %v", err)
	}
	t.Cleanup(func() { os.Remove(kid); os.Remove(dir) })
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	if err := os.WriteFile(filepath.Join(kid, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cgroupfs.RemoveTree(ctx, dir); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the process in the child cgroup still runs")
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s still there: %v", dir, err)
	}
	if err := cgroupfs.RemoveTree(ctx, dir); err != nil {
		t.Fatalf("a second removal: %v", err)
	}
}
