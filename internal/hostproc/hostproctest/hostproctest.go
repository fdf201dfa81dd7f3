// Package hostproctest starts a process at a pid another process just
// left: the pid reuse that signals by number must never reach.
package hostproctest

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// StartAt starts argv as its own process group leader at pid, which must
// be free (its last holder exited and was reaped), through the kernel's
// next-pid hint (ns_last_pid; root only). Other processes of the machine
// may fork in between: it tries again, and skips the test when the pid
// stays out of reach. The process is killed at cleanup.
func StartAt(t *testing.T, pid int, argv ...string) *exec.Cmd {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: ns_last_pid")
	}
	for try := 0; try < 200; try++ {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			t.Skipf("ns_last_pid: %v", err)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if cmd.Process.Pid == pid {
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			return cmd
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	t.Skipf("could not start a process at pid %d", pid)
	return nil
}

// Survives reports whether cmd's process is still running a moment
// after a signal that should have spared it (a SIGKILL takes effect when
// the process next runs, not when kill returns).
func Survives(cmd *exec.Cmd) bool {
	for range 50 {
		if exited(cmd.Process.Pid) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// exited: the process is gone or a zombie (killed, not reaped).
func exited(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ')' {
			return i+2 < len(s) && s[i+2] == 'Z'
		}
	}
	return true
}
