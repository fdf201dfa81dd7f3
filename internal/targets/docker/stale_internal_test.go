package docker

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/hostproc"
)

// isDaemonOf accepts the process only with the daemon's binary, this
// folder's flags and, when recorded, its start time. A shell standing in
// for dockerd (the binary given is sh) with the flags passes; without
// them, with another folder's, with another binary or another recorded
// start time, it does not.
func TestIsDaemonOf(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	other := t.TempDir()
	start := func(args ...string) *hostproc.Proc {
		cmd := exec.Command(sh, append([]string{"-c", "sleep 300; :"}, args...)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		p, err := hostproc.Pin(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		// Start returns once the exec has begun (its close-on-exec pipe
		// closed); the new program's arguments are in place a moment later,
		// and until then /proc/PID/cmdline reads empty (seen once in CI).
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if argv, err := p.Cmdline(); err == nil && argv[0] != "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("pid %d: no command line 5 s after it started", p.PID)
			}
		}
		return p
	}
	flags := func(d string) []string {
		return []string{"--data-root", filepath.Join(d, "d"), "--pidfile", filepath.Join(d, "dockerd.pid")}
	}
	ours := start(flags(dir)...)
	if err := isDaemonOf(ours, dir, sh); err != nil {
		t.Fatalf("the daemon of the folder refused: %v", err)
	}
	for name, tc := range map[string]struct {
		p   *hostproc.Proc
		bin string
	}{
		"no flags":       {start(), sh},
		"another folder": {start(flags(other)...), sh},
		"another binary": {ours, "/bin/true"},
	} {
		if err := isDaemonOf(tc.p, dir, tc.bin); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, startRecord), []byte("1 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := isDaemonOf(ours, dir, sh); err == nil {
		t.Error("another recorded start: accepted")
	}
	if err := recordStart(dir, ours.PID); err != nil {
		t.Fatal(err)
	}
	if err := isDaemonOf(ours, dir, sh); err != nil {
		t.Errorf("its own recorded start: %v", err)
	}
}
