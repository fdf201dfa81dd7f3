package hostsession_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/gatehouse-dev/gatehouse/internal/ledger"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/cgroupfs"
	"github.com/gatehouse-dev/gatehouse/internal/hostsession"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/internal/targets/supervisor"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// TestMain removes the probe build the tests share.
func TestMain(m *testing.M) {
	code := ledger.RunTests(m, probetest.Cleanup)
	os.Exit(code)
}

// start starts a session whose runtime is a shell that runs the init
// (init 0, the control connection as its stdin) as its child, in a new
// network namespace with only lo: the shape of a wrapper target, with no
// sandbox around it. The session is reaped at cleanup.
func start(t *testing.T) (*hostsession.Session, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces, cgroups, login uids")
	}
	if cgroupfs.Mount() == "" {
		t.Skip("no cgroup v2")
	}
	initBin := probetest.Build(t)
	netns := newNetns(t)
	s := &hostsession.Session{Name: "kit", Runtime: "the test shell", Profile: &profile.Profile{Network: profile.NetworkLab}, InitBin: initBin}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	if err := s.Prepare(netns, "gatehouse-test-kit-"+hex.EncodeToString(b)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Reap(context.Background()); err != nil {
			t.Errorf("Reap: %v", err)
		}
	})
	if s.Cgroup() == nil {
		t.Skip("no session cgroup here (cgroup.kill)")
	}
	ctl, child, err := supervisor.NewControl()
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()
	s.Control = ctl
	cmd := exec.Command("/bin/sh", "-c", `"$0" init 0; :`, initBin)
	cmd.Stdin = child
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	err = s.Launch(cmd, func() error {
		fd, err := unix.Open(netns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Setns(fd, unix.CLONE_NEWNET)
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Ready(ctx, &supervisor.Client{Dial: ctl.Dial, Gone: s.Gone(), WaitDelay: hostsession.WaitDelay}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return s, netns
}

func newNetns(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "gh-t" + hex.EncodeToString(b)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Skipf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	return "/run/netns/" + name
}

// sh runs a script in the session; it has to exit 0.
func sh(t *testing.T, s *hostsession.Session, script string) string {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.Run(ctx, targets.Command{Args: []string{"/bin/sh", "-c", script}, Stdout: &out, Stderr: &errb})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("sh -c %q: exit %d, err %v, stderr %q", script, res.ExitCode, err, errb.String())
	}
	return out.String()
}

// processes waits until the session lists at least n processes.
func processes(t *testing.T, s *hostsession.Session, n int) []int {
	t.Helper()
	var pids []int
	var err error
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		pids, err = s.Processes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(pids) >= n || time.Now().After(end) {
			return pids
		}
	}
}

// The keys a session gives monitors are the real ones: the cgroup id is
// the inode of the cgroup folder its processes are in (read from the
// host, through /proc), the namespace inode that of its session netns, and
// every process carries the session's login uid.
func TestSessionKeysAreTheSessionsCgroupAndNetns(t *testing.T) {
	s, netns := start(t)
	sh(t, s, "sleep 300 >/dev/null 2>&1 &")
	keys, err := s.SessionKeys(context.Background())
	if err != nil {
		t.Fatalf("SessionKeys: %v", err)
	}
	if len(keys) != 1 {
		t.Fatalf("want one key, got %+v", keys)
	}
	k := keys[0]
	pids := processes(t, s, 3) // the shell, the init, the sleep
	if len(pids) < 3 {
		t.Fatalf("Processes = %v: want the shell, the init and the sleep", pids)
	}
	for _, pid := range pids {
		ino, rel := procCgroup(t, pid)
		if ino != k.CgroupID || rel != k.CgroupPath {
			t.Errorf("pid %d is in cgroup %s (id %d); the key says %s (id %d)", pid, rel, ino, k.CgroupPath, k.CgroupID)
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/loginuid")
		if err != nil || k.LoginUID == 0 || strings.TrimSpace(string(b)) != strconv.FormatUint(uint64(k.LoginUID), 10) {
			t.Errorf("pid %d has login uid %q (%v); the key says %d", pid, b, err, k.LoginUID)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(netns, &st); err != nil {
		t.Fatal(err)
	}
	if k.CgroupID == 0 || k.NetnsInode != st.Ino {
		t.Errorf("key %+v: want a cgroup id and netns inode %d", k, st.Ino)
	}
}

// procCgroup is pid's cgroup v2 folder from /proc: its inode and path.
func procCgroup(t *testing.T, pid int) (uint64, string) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	rel := ""
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel = p
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(cgroupfs.Mount(), rel), &st); err != nil {
		t.Fatalf("pid %d's cgroup %q: %v", pid, rel, err)
	}
	return st.Ino, rel
}

// Stop leaves nothing of the session: every process it had (one that left
// the command's process group included) is gone, not even a zombie, the
// namespace holds no process, the cgroup is removed; a second Stop is
// fine and calls after it fail.
func TestStopLeavesNoProcessNotEvenAZombie(t *testing.T) {
	s, netns := start(t)
	sh(t, s, `setsid sh -c 'while :; do sleep 1; done' >/dev/null 2>&1 </dev/null & sleep 300 >/dev/null 2>&1 &`)
	pids := processes(t, s, 5) // the shell, the init, the loop, its sleep, the other sleep
	if len(pids) < 5 {
		t.Fatalf("Processes = %v: want the shell, the init and the three left", pids)
	}
	dir := s.Cgroup().Dir()
	ctx := context.Background()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	for _, pid := range pids {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status"); err == nil {
			t.Errorf("process %d of the session still exists (a zombie counts): %s", pid, firstLines(string(b), 3))
		}
	}
	id, err := hostsession.ReadNetnsID(netns)
	if err != nil {
		t.Fatal(err)
	}
	if left, err := id.Pids(); err != nil || len(left) != 0 {
		t.Errorf("processes left in the session namespace: %v %v", left, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cgroup %s still there after Stop: %v", dir, err)
	}
	if left, _ := s.Processes(ctx); len(left) != 0 {
		t.Errorf("Processes after Stop = %v", left)
	}
	if _, err := s.Run(ctx, targets.Command{Args: []string{"true"}}); err == nil {
		t.Error("Run after Stop succeeded")
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return fmt.Sprint(lines[:min(n, len(lines))])
}
