package hostproc_test

import (
	"bufio"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/hostproc"
	"github.com/gatehouse-dev/gatehouse/internal/hostproc/hostproctest"
)

// freedPid starts a process, lets it exit and reaps it: its pid is free
// for the next fork.
func freedPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// A pid listed a moment ago (in a cgroup, a namespace) whose process is
// gone may name another process now: SignalIf signals only the process
// its check recognises.
func TestSignalIfSparesAProcessThatTookThePidOver(t *testing.T) {
	tests := []struct {
		name     string
		is       func(string) (bool, error)
		wantDead bool
	}{
		{"the process meant is signalled", func(string) (bool, error) { return true, nil }, true},
		{"another process at the pid is not", hostproc.InCgroup("/gatehouse-session-that-is-gone"), false},
		{"nor one in another network namespace", hostproc.InNetns(0, 1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pid := freedPid(t)
			other := hostproctest.StartAt(t, pid, "sleep", "300")
			err := hostproc.SignalIf(pid, unix.SIGKILL, tt.is)
			if tt.wantDead {
				if err != nil {
					t.Fatal(err)
				}
				_ = other.Wait()
				return
			}
			if !errors.Is(err, hostproc.ErrNotIt) {
				t.Errorf("SignalIf = %v, want ErrNotIt", err)
			}
			if !hostproctest.Survives(other) {
				t.Fatal("the process that took the pid over was signalled")
			}
		})
	}
}

// A group is signalled through its leader's pidfd: once the leader was
// reaped, a new group that took its number is never reached, and the old
// group's members still are.
func TestSignalGroupReachesOnlyThePinnedGroup(t *testing.T) {
	t.Run("a group that took the number over is not signalled", func(t *testing.T) {
		leader := exec.Command("sleep", "300")
		leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := leader.Start(); err != nil {
			t.Fatal(err)
		}
		p, err := hostproc.PinChild(leader.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		_ = leader.Process.Kill()
		_ = leader.Wait()
		other := hostproctest.StartAt(t, p.PID, "sleep", "300") // its own group, same number
		if err := p.SignalGroup(unix.SIGKILL); !errors.Is(err, hostproc.ErrGone) {
			t.Errorf("SignalGroup = %v, want ErrGone", err)
		}
		if !hostproctest.Survives(other) {
			t.Fatal("the group that took the number over was signalled")
		}
	})
	t.Run("the group's members are, after its leader was reaped", func(t *testing.T) {
		// Orphans come to us, to be reaped here and not by a pid 1 that
		// never reaps.
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
		defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
		leader := exec.Command("sh", "-c", "sleep 300 & echo $!; exec sleep 300")
		leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := leader.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := leader.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		member, aerr := strconv.Atoi(strings.TrimSpace(line))
		if err != nil || aerr != nil {
			t.Fatalf("member pid %q: %v %v", line, err, aerr)
		}
		p, err := hostproc.PinChild(leader.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		_ = p.Signal(unix.SIGKILL) // the leader alone
		_ = leader.Wait()
		if err := p.SignalGroup(unix.SIGKILL); err != nil {
			t.Fatalf("SignalGroup after the leader was reaped: %v", err)
		}
		var ws unix.WaitStatus
		if _, err := unix.Wait4(member, &ws, 0, nil); err != nil || ws.Signal() != unix.SIGKILL {
			t.Fatalf("member %d: %v, status %v: want killed", member, err, ws)
		}
	})
}
