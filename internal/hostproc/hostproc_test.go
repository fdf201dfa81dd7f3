package hostproc

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func startSleep(t *testing.T, bin string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

func TestReadRefusesOnceThePinnedProcessIsGone(t *testing.T) {
	cmd := startSleep(t, "sleep")
	p, err := Pin(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ns, err := p.Namespaces([]string{"pid", "net"})
	if err != nil || ns["pid"] == "" {
		t.Fatalf("alive: namespaces %v, %v", ns, err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if _, err := p.Namespaces([]string{"pid"}); !errors.Is(err, ErrGone) {
		t.Fatalf("after exit: %v, want ErrGone", err)
	}
	if p.Alive() {
		t.Fatal("Alive after exit")
	}
}

// A zombie (exited, not yet reaped) still holds its pid but runs nothing:
// it is gone for reading.
func TestZombieIsGone(t *testing.T) {
	cmd := exec.Command("sh", "-c", "exit 0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	p, err := Pin(cmd.Process.Pid)
	if err != nil {
		if errors.Is(err, ErrGone) {
			return // already a zombie when pinned: refused, as it should be
		}
		t.Fatal(err)
	}
	defer p.Close()
	deadline := time.Now().Add(5 * time.Second)
	for p.Alive() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if p.Alive() {
		t.Fatal("a zombie reads as alive")
	}
}

// A start time that is not the process's (a pid reused by another
// process) is refused even while something runs at the pid.
func TestReadRefusesAnotherStartTime(t *testing.T) {
	cmd := startSleep(t, "sleep")
	p, err := Pin(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.Start++
	if err := p.Read(func(string) error { return nil }); !errors.Is(err, ErrGone) {
		t.Fatalf("Read with a wrong start time: %v", err)
	}
}

func TestCredsAndEnviron(t *testing.T) {
	cmd := exec.Command("sleep", "300")
	cmd.Env = []string{"GH_TEST=1"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	p, err := Pin(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := p.Creds()
	if err != nil {
		t.Fatal(err)
	}
	if c.HostUID() != os.Getuid() || c.HostGID() != os.Getgid() || !strings.HasPrefix(c.UIDMap, "0 0 ") {
		t.Fatalf("creds %+v", c)
	}
	env, err := p.Environ(1 << 20)
	if err != nil || len(env) != 1 || env[0] != "GH_TEST=1" {
		t.Fatalf("environ %q, %v", env, err)
	}
}

// FindInit takes the process by its executable file and its ancestry: a
// process running the same file outside the tree, and one running
// another file inside it, are not it; two candidates are an error.
func TestFindInit(t *testing.T) {
	dir := t.TempDir()
	initBin := filepath.Join(dir, "init")
	copyFile(t, mustLook(t, "sleep"), initBin)
	decoy := startSleep(t, initBin) // same file, not under top
	// top starts the init and an ordinary sleep, then waits.
	top := exec.Command("sh", "-c", `"$0" 300 & sleep 300 & wait`, initBin)
	if err := top.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, k := range children(top.Process.Pid) {
			_ = syscall.Kill(k, syscall.SIGKILL)
		}
		_ = top.Process.Kill()
		_ = top.Wait()
	})
	var kids []int
	deadline := time.Now().Add(5 * time.Second)
	for len(kids) < 2 && time.Now().Before(deadline) {
		kids = children(top.Process.Pid)
		time.Sleep(10 * time.Millisecond)
	}
	all := append([]int{decoy.Process.Pid, top.Process.Pid}, kids...)
	p, err := FindInit(top.Process.Pid, all, initBin)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.PID == decoy.Process.Pid || !Descends(p.PID, top.Process.Pid) {
		t.Fatalf("found pid %d (decoy %d, top %d)", p.PID, decoy.Process.Pid, top.Process.Pid)
	}
	if _, err := FindInit(1, all, initBin); err == nil {
		t.Fatal("two processes of the file under pid 1: want an error")
	}
}

func children(pid int) []int {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func mustLook(t *testing.T, name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skip(err)
	}
	return p
}

func copyFile(t *testing.T, src, dst string) {
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	out.Close()
}
