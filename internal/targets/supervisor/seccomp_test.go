package supervisor_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/targets/supervisor"
)

// socketQueries are the socket calls Codex's sandbox (0.171.0, network
// off) answers with EPERM, as traced: the control channel may use none of
// them. recvmsg, read and write stay allowed there.
var socketQueries = []uintptr{
	unix.SYS_GETSOCKOPT, unix.SYS_SETSOCKOPT, unix.SYS_GETSOCKNAME, unix.SYS_GETPEERNAME,
	unix.SYS_CONNECT, unix.SYS_BIND, unix.SYS_LISTEN, unix.SYS_ACCEPT, unix.SYS_ACCEPT4,
	unix.SYS_SENDTO, unix.SYS_SENDMSG, unix.SYS_SENDMMSG, unix.SYS_SHUTDOWN,
}

var auditArch = map[string]uint32{"amd64": 0xc000003e, "arm64": 0xc00000b7}

// denySocketQueries installs, on every thread of this process, a seccomp
// filter refusing socketQueries with EPERM, as Codex's does.
func denySocketQueries() error {
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("no audit arch for %s", runtime.GOARCH)
	}
	const (
		ret   = unix.BPF_RET | unix.BPF_K
		ld    = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		allow = unix.SECCOMP_RET_ALLOW
		eperm = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	)
	n := len(socketQueries)
	prog := []unix.SockFilter{
		{Code: ld, K: 4}, // seccomp_data.arch
		{Code: jeq, Jt: 1, K: arch},
		{Code: ret, K: unix.SECCOMP_RET_KILL_PROCESS},
		{Code: ld, K: 0}, // seccomp_data.nr
	}
	for i, nr := range socketQueries {
		// Jump to the EPERM return after the rest of the list and the allow.
		prog = append(prog, unix.SockFilter{Code: jeq, Jt: uint8(n - i), K: uint32(nr)})
	}
	prog = append(prog, unix.SockFilter{Code: ret, K: allow}, unix.SockFilter{Code: ret, K: eperm})
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return e
	}
	return nil
}

// The init serves calls under a filter refusing getsockopt and getsockname
// (Codex with the network off): net.FileConn needs both, and every call was
// dropped unanswered before the control connection stopped using it.
func TestControlModeUnderSocketFilter(t *testing.T) {
	if _, ok := auditArch[runtime.GOARCH]; !ok {
		t.Skipf("no seccomp test filter for %s", runtime.GOARCH)
	}
	ctl, child, err := supervisor.NewControl()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(noProxy(os.Environ()), "GH_SUPERVISOR=control-filtered")
	cmd.Stdin = child
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child.Close()
	gone := make(chan struct{})
	go func() { _ = cmd.Wait(); close(gone) }()
	t.Cleanup(func() { ctl.Close(); _ = cmd.Process.Kill(); <-gone })
	c := &supervisor.Client{Dial: ctl.Dial, Gone: gone, WaitDelay: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("ping under the filter: %v (init said: %s)", err, stderr.String())
	}
	// The filter is really there: the command (the init's child) inherits it.
	res, out, _, err := sh(t, c, `exec 3<>/dev/null; python3 -c 'import socket; socket.socketpair()[0].getsockopt(socket.SOL_SOCKET, socket.SO_TYPE)' 2>&1 | grep -c 'Operation not permitted' || true; echo done`, nil)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec under the filter: %v %+v", err, res)
	}
	if _, err := exec.LookPath("python3"); err == nil && !strings.HasPrefix(out, "1\n") {
		t.Fatalf("the test filter did not refuse getsockopt in the command: %q", out)
	}
	if !strings.HasSuffix(out, "done\n") {
		t.Fatalf("stdout %q", out)
	}
}
