package docker_test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/targets/docker"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// inNetns runs fn on a thread that joined the lab namespace. The thread is
// never returned to the pool (it dies with the goroutine), so nothing else
// runs in the wrong namespace; sockets fn opens stay in the lab namespace.
func inNetns(t *testing.T, fn func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open(labNetns)
		if err != nil {
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		errc <- fn()
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestLabDaemonCannotReachOutside proves, without sending anything out,
// that the daemon's namespace has no route beyond itself, and then that a
// container on its default bridge reaches the lab side (positive control)
// but gets "unreachable" for an outside address, from the lab namespace's
// own routing, for runc and for gVisor's netstack.
func TestLabDaemonCannotReachOutside(t *testing.T) {
	needLab(t)
	var ln net.Listener
	inNetns(t, func() error {
		// connect() on UDP only asks the routing table: no packet is sent.
		c, err := net.Dial("udp4", "192.0.2.1:9")
		if err == nil {
			c.Close()
			return errors.New("lab namespace has a route to 192.0.2.1: refusing to go on")
		}
		if !errors.Is(err, syscall.ENETUNREACH) {
			return fmt.Errorf("udp connect to 192.0.2.1: %v, want ENETUNREACH", err)
		}
		ln, err = net.Listen("tcp4", "0.0.0.0:0")
		return err
	})
	t.Cleanup(func() { ln.Close() })
	got := make(chan string, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(c).ReadString('\n')
			got <- strings.TrimSpace(line)
			c.Close()
		}
	}()
	gw := bridgeAddr(t)
	port := ln.Addr().(*net.TCPAddr).Port
	lab := targets.Network{NetnsName: filepath.Base(labNetns), NetnsPath: labNetns}
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			if rt == "runsc" {
				needRunsc(t)
			}
			_, s := start(t, docker.Spec{Runtime: rt, Network: docker.NetworkLab}, targets.Spec{Name: t.Name(), Network: lab})
			code, _, errs := run(t, s, "", "sh", "-c", fmt.Sprintf("echo hello-%s | nc -w 3 %s %d", rt, gw, port))
			if code != 0 {
				t.Fatalf("positive control: container could not reach the lab side %s:%d: %s", gw, port, errs)
			}
			select {
			case line := <-got:
				if line != "hello-"+rt {
					t.Errorf("lab listener got %q", line)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("lab listener got nothing")
			}
			code, _, errs = run(t, s, "", "nc", "-w", "2", "192.0.2.1", "9")
			if code == 0 || !strings.Contains(strings.ToLower(errs), "unreachable") && !strings.Contains(strings.ToLower(errs), "no route") {
				t.Errorf("outside address: exit %d, stderr %q; want unreachable", code, errs)
			}
		})
	}
}

// bridgeAddr is docker0's address in the lab namespace: the containers'
// gateway, which is the lab namespace itself.
func bridgeAddr(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("ip", "-n", filepath.Base(labNetns), "-4", "-o", "addr", "show", "docker0").Output()
	if err != nil {
		t.Fatalf("docker0 in lab namespace: %v", err)
	}
	f := strings.Fields(string(out))
	for i, w := range f {
		if w == "inet" && i+1 < len(f) {
			return strings.SplitN(f[i+1], "/", 2)[0]
		}
	}
	t.Fatalf("docker0 has no IPv4 address: %s", out)
	return ""
}
