package docker

import (
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/hostproc/hostproctest"
)

// The careless stop signals each exec's host process twice, seconds
// apart: an exec that ended on the SIGTERM and whose pid another process
// took by the SIGKILL is not signalled again, nor is one the daemon no
// longer names as running when asked a second time.
func TestStopProcessesSignalsOnlyTheExecs(t *testing.T) {
	tests := []struct {
		name string
		// second is the daemon's second answer about the exec.
		second func(pid int) (int, bool)
		pinned bool
	}{
		{"the exec's process, named twice", func(pid int) (int, bool) { return pid, true }, true},
		{"an exec that ended between the answers", func(int) (int, bool) { return 0, false }, false},
		{"a pid the daemon named differently the second time", func(pid int) (int, bool) { return pid + 1, true }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			execCmd := exec.Command("sleep", "300")
			if err := execCmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = execCmd.Process.Kill(); _ = execCmd.Wait() })
			pid := execCmd.Process.Pid
			asked := 0
			procs := pinExecs([]string{"exec1"}, func(string) (int, bool) {
				if asked++; asked == 1 {
					return pid, true
				}
				return tt.second(pid)
			})
			defer func() {
				for _, p := range procs {
					p.Close()
				}
			}()
			if (len(procs) == 1) != tt.pinned {
				t.Fatalf("pinned %d, want pinned %v", len(procs), tt.pinned)
			}
			// The exec ends on the SIGTERM; its pid goes to another.
			_ = execCmd.Process.Kill()
			_ = execCmd.Wait()
			other := hostproctest.StartAt(t, pid, "sleep", "300")
			signalExecs(procs, unix.SIGKILL)
			if !hostproctest.Survives(other) {
				t.Fatal("the SIGKILL reached the process that took the exec's pid")
			}
		})
	}
}
