package exec

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/gatehouse-dev/gatehouse/internal/ledger"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"os"
	osexec "os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
)

func TestMain(m *testing.M) {
	if ns := os.Getenv("GH_EXEC_MAIN_THREAD_IN"); ns != "" {
		os.Exit(mainThreadMoved(ns))
	}
	code := ledger.RunTests(m, probetest.Cleanup) // the probe built for the whole test binary
	os.Exit(code)
}

// mainThreadMoved puts the main thread into the namespace at ns, as a
// locked goroutine that ran on it and ended leaves it, then checks a
// session in ns. Exit 0: accepted; 1: refused; 3: not on the main thread.
func mainThreadMoved(ns string) int {
	runtime.LockOSThread()
	if unix.Gettid() != os.Getpid() {
		return 3
	}
	fd, err := unix.Open(ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		err = unix.Setns(fd, unix.CLONE_NEWNET)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	done := make(chan error)
	go func() {
		done <- checkNetwork(&profile.Profile{Network: profile.NetworkLab}, targets.Network{NetnsPath: ns})
	}()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// A session's namespace is not "the machine's" because the main thread
// happens to be in it: Go parks, never ends, a main thread that a locked
// goroutine left in a session's namespace (the benchmarks hit it).
func TestCheckNetworkAfterMainThreadJoinedSession(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes a network namespace")
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "gh-mt" + hex.EncodeToString(b)
	if out, err := osexec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Skipf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = osexec.Command("ip", "netns", "del", name).Run() })
	cmd := osexec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GH_EXEC_MAIN_THREAD_IN=/run/netns/"+name)
	out, err := cmd.CombinedOutput()
	var ee *osexec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitCode() == 3:
		t.Skip("the test binary's main goroutine was not on the main thread")
	default:
		t.Fatalf("session namespace refused after the main thread joined it: %v: %s", err, out)
	}
	// The machine's own namespace is still refused.
	if err := checkNetwork(&profile.Profile{Network: profile.NetworkLab}, targets.Network{NetnsPath: "/proc/thread-self/ns/net"}); !errors.Is(err, ErrSharedNetwork) {
		t.Fatalf("own namespace: %v, want ErrSharedNetwork", err)
	}
}

// The wrapper's mount namespace keeps the session's own namespace handle
// and none of the others: another session's namespace deleted while bwrap
// (srt, codex) bound / made it die at start.
func TestWrapperViewDropsOtherNetnsHandles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes network and mount namespaces")
	}
	var names []string
	for i := 0; i < 2; i++ {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		name := "gh-mv" + hex.EncodeToString(b)
		if out, err := osexec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
			t.Skipf("ip netns add: %v: %s", err, out)
		}
		t.Cleanup(func() { _ = osexec.Command("ip", "netns", "del", name).Run() })
		names = append(names, "/run/netns/"+name)
	}
	done := make(chan string, 1)
	go func() {
		// Never unlocked: the thread ends with its private mount namespace.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			done <- "unshare: " + err.Error()
			return
		}
		if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			done <- "private: " + err.Error()
			return
		}
		detachNetns(names[0])
		data, err := os.ReadFile("/proc/thread-self/mountinfo")
		if err != nil {
			done <- err.Error()
			return
		}
		done <- string(data)
	}()
	info := <-done
	if !strings.Contains(info, " "+names[0]+" ") {
		t.Fatalf("the session's own handle %s is gone:\n%s", names[0], info)
	}
	if strings.Contains(info, " "+names[1]+" ") {
		t.Fatalf("another namespace's handle %s is still mounted", names[1])
	}
	// The host keeps both.
	host, _ := os.ReadFile("/proc/thread-self/mountinfo")
	if !strings.Contains(string(host), " "+names[1]+" ") {
		t.Fatalf("the host lost %s", names[1])
	}
}
