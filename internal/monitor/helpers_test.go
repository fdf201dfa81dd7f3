package monitor_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/internal/monitor"
)

// The test binary doubles as the child whose activity is observed: with
// GH_MONITOR_CHILD set it runs that mode and exits.
const childEnv = "GH_MONITOR_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		if err := child(mode); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child runs in a fresh cgroup and a fresh network namespace with only lo:
// connects to lab addresses fail there with ENETUNREACH, after the syscall
// was entered (which is what the monitor sees). Before each attempt it
// prints "label unix-nanos" on stdout.
func child(mode string) error {
	mark := func(label string) { fmt.Printf("%s %d\n", label, time.Now().UnixNano()) }
	n, _ := strconv.Atoi(os.Getenv("GH_MONITOR_N"))
	switch mode {
	case "actions":
		// A session's launcher sets a unique loginuid the sandbox cannot
		// change; the monitor reads it from task_struct. The loginuid is
		// a thread's: every attempt and fork below runs on this locked
		// thread (written through /proc/self, one thread had it and a
		// fork from another, likelier under load, did not).
		runtime.LockOSThread()
		if lu := os.Getenv("GH_MONITOR_LOGINUID"); lu != "" {
			if err := os.WriteFile("/proc/thread-self/loginuid", []byte(lu), 0); err != nil {
				return fmt.Errorf("set loginuid: %w", err)
			}
		}
		if err := loUp(); err != nil {
			return err
		}
		mark("connect4")
		_ = tcpConnect(unix.AF_INET, &unix.SockaddrInet4{Port: 80, Addr: [4]byte{203, 0, 113, 10}})
		mark("connect6")
		_ = tcpConnect(unix.AF_INET6, &unix.SockaddrInet6{Port: 80, Addr: [16]byte{0x20, 0x01, 0x0d, 0xb8, 0xca, 0xfe, 15: 0x10}})
		mark("dns-sendto")
		_ = udpSendTo("t1.oob.gatehouse.test", &unix.SockaddrInet4{Port: 53, Addr: [4]byte{203, 0, 113, 54}})
		mark("dns-write")
		if err := udpConnectWrite("t2.oob.gatehouse.test", &unix.SockaddrInet4{Port: 53, Addr: [4]byte{127, 0, 0, 53}}); err != nil {
			return fmt.Errorf("udp on lo: %w", err)
		}
		mark("open")
		if f, err := os.Open(os.Getenv("GH_MONITOR_FILE")); err == nil {
			f.Close()
		}
		mark("exec-true")
		if err := exec.Command("/bin/true").Run(); err != nil {
			return err
		}
		mark("exec-sh")
		return exec.Command("/bin/sh", "-c", ":").Run()
	case "connects":
		for i := range n {
			mark(strconv.Itoa(i))
			_ = tcpConnect(unix.AF_INET, &unix.SockaddrInet4{Port: 1024 + i%60000, Addr: [4]byte{203, 0, 113, 10}})
			time.Sleep(2 * time.Millisecond)
		}
		return nil
	case "opens":
		mark("start")
		for range n {
			_, _ = unix.Open("/gh-monitor-bench-absent", unix.O_RDONLY, 0)
		}
		mark("end")
		return nil
	case "seccomp":
		if err := loUp(); err != nil {
			return err
		}
		mark("control")
		_ = tcpConnect(unix.AF_INET, &unix.SockaddrInet4{Port: 80, Addr: [4]byte{203, 0, 113, 10}})
		runtime.LockOSThread() // the filter is installed on this thread only
		if err := refuseConnect(); err != nil {
			return err
		}
		mark("refused")
		if err := tcpConnect(unix.AF_INET, &unix.SockaddrInet4{Port: 81, Addr: [4]byte{203, 0, 113, 10}}); !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("connect under seccomp: %v, want EPERM", err)
		}
		return nil
	case "badaddr":
		// connect(2) with a destination the kernel cannot read at syscall
		// entry: a bad pointer, then a fresh page never touched (not
		// faulted in: probe_read_user does not fault it).
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		_, _, _ = unix.Syscall(unix.SYS_CONNECT, uintptr(fd), 0x10, 16)
		page, err := unix.Mmap(-1, 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return err
		}
		_, _, _ = unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&page[0])), 16)
		return nil
	case "linger":
		// A session process that keeps going: says ready, waits for a
		// line on stdin (the harness's stop happened meanwhile), opens a
		// file (a syscall after the stop), says done and lingers until
		// killed.
		fmt.Println("ready")
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			return err
		}
		mark("after-stop")
		if f, err := os.Open("/etc/hostname"); err == nil {
			f.Close()
		}
		fmt.Println("done")
		time.Sleep(time.Minute)
		return errors.New("not killed")
	case "hold":
		m, err := monitor.New(monitor.Options{})
		if err != nil {
			return err
		}
		if err := m.Start(context.Background()); err != nil {
			return err
		}
		ids, err := m.IDs()
		if err != nil {
			return err
		}
		for _, id := range ids.Programs {
			fmt.Printf("prog %d\n", id)
		}
		for _, id := range ids.Links {
			fmt.Printf("link %d\n", id)
		}
		for _, id := range ids.Maps {
			fmt.Printf("map %d\n", id)
		}
		fmt.Println("ready")
		time.Sleep(time.Minute) // killed by the parent
		return errors.New("not killed")
	}
	return fmt.Errorf("unknown mode %q", mode)
}

// refuseConnect installs a seccomp filter on this thread that fails
// connect(2) with EPERM (native arch only; anything else allowed).
func refuseConnect() error {
	nr := uint32(unix.SYS_CONNECT)
	filter := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: nr, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	return unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0)
}

func loUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

func tcpConnect(fam int, sa unix.Sockaddr) error {
	fd, err := unix.Socket(fam, unix.SOCK_STREAM, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Connect(fd, sa)
}

func query(name string) []byte {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	b, _ := m.Pack()
	return b
}

func udpSendTo(name string, sa unix.Sockaddr) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Sendto(fd, query(name), 0, sa)
}

func udpConnectWrite(name string, sa unix.Sockaddr) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, sa); err != nil {
		return err
	}
	_, err = unix.Write(fd, query(name))
	return err
}

// --- parent side ---

func needRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("the monitor needs root (CAP_BPF, CAP_PERFMON) to load")
	}
}

func startMonitor(tb testing.TB, opts monitor.Options) *monitor.Monitor {
	tb.Helper()
	needRoot(tb)
	m, err := monitor.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		if errors.Is(err, monitor.ErrUnsupported) {
			tb.Skipf("BPF unavailable here: %v", err)
		}
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = m.Close() })
	return m
}

// collector drains a monitor's events.
type collector struct {
	mu     sync.Mutex
	events []detect.Event
	done   chan struct{}
}

func collect(m *monitor.Monitor) *collector {
	c := &collector{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for e := range m.Events() {
			c.mu.Lock()
			c.events = append(c.events, e)
			c.mu.Unlock()
		}
	}()
	return c
}

func (c *collector) snapshot() []detect.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]detect.Event(nil), c.events...)
}

// waitFor polls until ok holds on the events so far or the deadline passes.
func (c *collector) waitFor(d time.Duration, ok func([]detect.Event) bool) []detect.Event {
	end := time.Now().Add(d)
	for {
		evs := c.snapshot()
		if ok(evs) || time.Now().After(end) {
			return evs
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cgroup is a fresh cgroup v2 directory under our own.
type cgroup struct {
	dir string
	id  uint64
}

func newCgroup(tb testing.TB) cgroup {
	tb.Helper()
	mnt := cgroup2Mount()
	if mnt == "" {
		tb.Skip("no cgroup v2 hierarchy mounted")
	}
	self, err := ownCgroup()
	if err != nil {
		tb.Skip(err)
	}
	dir, err := os.MkdirTemp(filepath.Join(mnt, self), "gh-monitor-test-")
	if err != nil {
		tb.Skipf("cannot create a cgroup: %v", err)
	}
	tb.Cleanup(func() { _ = os.Remove(dir) })
	id, err := monitor.CgroupID(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return cgroup{dir: dir, id: id}
}

func cgroup2Mount() string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		if f := strings.Fields(pre); len(f) >= 5 && f[3] == "/" {
			return f[4]
		}
	}
	return ""
}

func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("no cgroup v2 membership")
}

// runChild runs the test binary in mode inside cg and a new network
// namespace, and returns its marks (label → wall time before the attempt)
// and its pid.
func runChild(tb testing.TB, mode string, cg cgroup, env ...string) (map[string]time.Time, int) {
	tb.Helper()
	cmd, out := childCmd(tb, mode, cg, env...)
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start child: %v", err)
	}
	marks := readMarks(out)
	if err := cmd.Wait(); err != nil {
		tb.Fatalf("child %s: %v", mode, err)
	}
	return marks, cmd.Process.Pid
}

func childCmd(tb testing.TB, mode string, cg cgroup, env ...string) (*exec.Cmd, io.Reader) {
	tb.Helper()
	fd, err := unix.Open(cg.dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { unix.Close(fd) })
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + mode}, env...)...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		UseCgroupFD: true, CgroupFD: fd,
		Cloneflags: syscall.CLONE_NEWNET, // only lo: nothing leaves the machine
		Pdeathsig:  syscall.SIGKILL,
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	return cmd, out
}

func readMarks(r io.Reader) map[string]time.Time {
	marks := map[string]time.Time{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		label, ns, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(ns, 10, 64); err == nil {
			marks[label] = time.Unix(0, n)
		}
	}
	return marks
}
