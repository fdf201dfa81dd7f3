package hostsession

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/cgroupfs"
	"github.com/gatehouse-dev/gatehouse/internal/hostproc"
	"github.com/gatehouse-dev/gatehouse/internal/hostproc/hostproctest"
)

// startLeader starts a process group leader as the session's instance,
// pinned and waited for as Start does.
func startLeader(t *testing.T) *Session {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	leader, err := hostproc.PinChild(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{Runtime: "sleep", inst: cmd, leader: leader, gone: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.gone) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-s.gone; leader.Close() })
	return s
}

// Reap after Stop ends the runtime's group a second time, long after the
// first reaped it: a group that took its number over since is not
// signalled.
func TestKillInstanceTwiceSparesAGroupThatTookTheNumber(t *testing.T) {
	s := startLeader(t)
	ctx := context.Background()
	if err := s.killInstance(ctx); err != nil {
		t.Fatalf("first kill: %v", err)
	}
	other := hostproctest.StartAt(t, s.inst.Process.Pid, "sleep", "300")
	if err := s.killInstance(ctx); err != nil {
		t.Fatalf("second kill: %v", err)
	}
	if !hostproctest.Survives(other) {
		t.Fatal("the second stop killed the group that took the number over")
	}
}

// The teardown kills what it listed in the session's cgroup a moment
// ago: a listed pid whose process is gone and whose number another
// process outside the cgroup took is not signalled.
func TestKillListedSparesAPidThatLeftTheCgroup(t *testing.T) {
	if cgroupfs.Mount() == "" {
		t.Skip("no cgroup v2")
	}
	cg, err := NewCgroup(fmt.Sprintf("gatehouse-test-kill-%d", os.Getpid()))
	if err != nil || cg == nil {
		t.Skipf("no session cgroup here: %v", err)
	}
	defer func() { _ = cg.Destroy(context.Background()) }()
	dir, err := cg.Open()
	if err != nil {
		t.Fatal(err)
	}
	inside := exec.Command("sleep", "300")
	inside.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
	err = inside.Start()
	dir.Close()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- inside.Wait() }()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	other := hostproctest.StartAt(t, gone.Process.Pid, "sleep", "300")
	killed := cg.killListed([]int{inside.Process.Pid, other.Process.Pid}, nil)
	if len(killed) != 1 || killed[0] != inside.Process.Pid {
		t.Errorf("killed %v, want only %d", killed, inside.Process.Pid)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Error("the session's process was not killed")
	}
	if !hostproctest.Survives(other) {
		t.Fatal("a process outside the session's cgroup was killed")
	}
}
