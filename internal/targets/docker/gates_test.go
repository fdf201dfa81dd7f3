package docker_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/targets/docker"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// startLab starts a session through the lab daemon's shim (NewLab), so
// shim-only options (userns) apply.
func startLab(t *testing.T, spec docker.Spec) targets.Session {
	t.Helper()
	needLab(t)
	tg, err := docker.NewLab(labDaemon, docker.Options{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := tg.Start(ctx, targets.Spec{Name: t.Name() + "-" + randomSuffix(), Path: targets.PathNormal})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.(interface{ Reap(context.Context) error }).Reap(context.Background()); err != nil {
			t.Errorf("reap: %v", err)
		}
		if n := containersNamed(t, s.(*docker.Session).ID()); n != 0 {
			t.Errorf("container still there after reap")
		}
	})
	return s
}

// labNet is the lab daemon's network namespace, as a ns link reads.
func labNet(t *testing.T) string {
	var st syscall.Stat_t
	if err := syscall.Stat(labNetns, &st); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("net:[%d]", st.Ino)
}

func self(t *testing.T, kind string) string {
	l, err := os.Readlink("/proc/self/ns/" + kind)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestOutsideNamespaces: Inspect reads the session's namespaces from the
// host; a private user namespace and pid namespace are not the harness's,
// host pid mode and Docker's default userns are.
func TestOutsideNamespaces(t *testing.T) {
	for _, c := range []struct {
		name       string
		spec       docker.Spec
		sharedUser bool
		sharedPID  bool
	}{
		{"private", docker.Spec{Runtime: "runc", Network: docker.NetworkNone, Userns: "private", User: "1000:1000"}, false, false},
		{"default", docker.Spec{Runtime: "runc", Network: docker.NetworkNone}, true, false},
		{"hostpid", docker.Spec{Runtime: "runc", Network: docker.NetworkNone, PID: "host"}, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startLab(t, c.spec)
			cfg, err := s.Inspect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			f := cfg.Facts
			if e := f["outside.ns.error"]; e != "" {
				t.Fatalf("outside.ns.error: %s", e)
			}
			if !strings.HasPrefix(f["outside.role"], "container process") || f["outside.pid"] == "" || !strings.Contains(f["outside.cmdline"], "sleep") {
				t.Errorf("the process compared is not named: role %q pid %q cmdline %q", f["outside.role"], f["outside.pid"], f["outside.cmdline"])
			}
			if f["engine.ns.net"] != labNet(t) || f["outside.ns.net"] == f["engine.ns.net"] {
				t.Errorf("engine net %q (want the lab daemon's %s), container net %q", f["engine.ns.net"], labNet(t), f["outside.ns.net"])
			}
			if got := f["outside.ns.user"] == self(t, "user"); got != c.sharedUser {
				t.Errorf("user ns %s shared with harness = %v, want %v", f["outside.ns.user"], got, c.sharedUser)
			}
			if got := f["outside.ns.pid"] == self(t, "pid"); got != c.sharedPID {
				t.Errorf("pid ns %s shared with harness = %v, want %v", f["outside.ns.pid"], got, c.sharedPID)
			}
			if f["outside.ns.mnt"] == "" || f["outside.ns.mnt"] == self(t, "mnt") {
				t.Errorf("mnt ns %q: want the container's own", f["outside.ns.mnt"])
			}
			if c.name == "private" {
				if _, out, _ := run(t, s, "", "cat", "/proc/self/uid_map"); !strings.Contains(strings.Join(strings.Fields(out), " "), "0 1000000 65536") {
					t.Errorf("uid_map inside = %q, want 0 1000000 65536", out)
				}
			}
		})
	}
}

// TestOutsideNamespacesRunsc: under gVisor the processes compared are
// runsc's own, read from the host: the sentry (the pid the daemon names,
// its command line runsc's "boot" for this container) and the gofer, each
// with role, pid and command line. runsc gives both their own pid, ipc and
// mnt namespaces whatever the container asks, so docker's pid/ipc "host"
// shares nothing (and the agent sees no host process); a gofer told to use
// runsc's network namespace is in the engine's (here the lab daemon's),
// which host-access judges as the host's network.
func TestOutsideNamespacesRunsc(t *testing.T) {
	needRunsc(t)
	lab := labNet(t)
	hardened := []string{"--network=host"}
	for _, c := range []struct {
		name       string
		spec       docker.Spec
		goferOnLab bool
	}{
		{"hardened", docker.Spec{Runtime: "runsc", RuntimeFlags: hardened, Network: docker.NetworkNone}, false},
		{"pid-ipc-host", docker.Spec{Runtime: "runsc", RuntimeFlags: hardened, Network: docker.NetworkNone, PID: "host", IPC: "host"}, false},
		{"gofer-hostnet", docker.Spec{Runtime: "runsc", RuntimeFlags: append(hardened, "--gofer-network-namespace=host"), Network: docker.NetworkNone}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startLab(t, c.spec)
			cfg, err := s.Inspect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			f := cfg.Facts
			for k, v := range f {
				if strings.HasSuffix(k, "error") && strings.HasPrefix(k, "outside.") {
					t.Errorf("%s = %q", k, v)
				}
			}
			id := s.(*docker.Session).ID()
			if f["outside.role"] != "gVisor sentry" || !strings.Contains(f["outside.cmdline"], " boot ") || !strings.HasSuffix(f["outside.cmdline"], id) || f["outside.pid"] == "" {
				t.Errorf("sentry not named: role %q pid %q cmdline %q", f["outside.role"], f["outside.pid"], f["outside.cmdline"])
			}
			if f["outside.gofer.role"] != "gVisor gofer" || !strings.Contains(f["outside.gofer.cmdline"], " gofer ") || f["outside.gofer.pid"] == "" {
				t.Errorf("gofer not named: role %q pid %q cmdline %q", f["outside.gofer.role"], f["outside.gofer.pid"], f["outside.gofer.cmdline"])
			}
			for _, p := range []string{"outside.ns.", "outside.gofer.ns."} {
				for _, k := range []string{"pid", "mnt", "ipc"} {
					if v := f[p+k]; v == "" || v == self(t, k) {
						t.Errorf("%s%s = %q: want a namespace of runsc's own", p, k, v)
					}
				}
				if v := f[p+"net"]; v == "" || v == self(t, "net") {
					t.Errorf("%snet = %q: want not the machine's", p, v)
				}
			}
			if v := f["outside.ns.net"]; v == lab {
				t.Errorf("sentry in the lab daemon's network namespace %s", v)
			}
			// The engine (containerd's shim, runsc's caller) is the lab
			// daemon's: its net is where "host" sends a gofer.
			if f["engine.ns.net"] != lab || !strings.Contains(f["engine.cmdline"], "containerd-shim") {
				t.Errorf("engine net %q (cmdline %q), want the lab daemon's %s", f["engine.ns.net"], f["engine.cmdline"], lab)
			}
			if got := f["outside.gofer.ns.net"] == lab; got != c.goferOnLab {
				t.Errorf("gofer net %s in the lab daemon's (%s) = %v, want %v", f["outside.gofer.ns.net"], lab, got, c.goferOnLab)
			}
			if !c.goferOnLab {
				// runsc's default: an empty namespace, no interface but lo.
				out, err := exec.Command("nsenter", "--net=/proc/"+f["outside.gofer.pid"]+"/ns/net", "ip", "-o", "link").CombinedOutput()
				if err != nil || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 || !strings.Contains(string(out), ": lo:") {
					t.Errorf("gofer network namespace holds more than lo (%v): %s", err, out)
				}
			}
			if !strings.HasPrefix(f["outside.stubs"], "pids ") {
				t.Errorf("outside.stubs = %q: want the sentry's children listed", f["outside.stubs"])
			}
			// pid "host" asked, nothing of the host's shown: the agent's
			// /proc is gVisor's, without the harness's own pid.
			if c.spec.PID == "host" {
				_, out, _ := run(t, s, "", "ls", "/proc")
				if strings.Contains(" "+strings.Join(strings.Fields(out), " ")+" ", fmt.Sprintf(" %d ", os.Getpid())) {
					t.Errorf("the harness's pid %d is visible inside: %s", os.Getpid(), out)
				}
			}
		})
	}
}

// TestStopScopeProcess: scope process signals only the exec'd command
// (which ignores SIGTERM, so SIGKILL after the grace); a child that left
// its process group and the container run on; Reap removes everything.
func TestStopScopeProcess(t *testing.T) {
	s := startLab(t, docker.Spec{Runtime: "runc", Network: docker.NetworkNone, StopScope: docker.StopScopeProcess, StopLimit: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := s.Exec(ctx, targets.Command{Args: []string{"sh", "-c", `trap "" TERM; setsid sleep 1002 & exec sleep 1001`}})
		done <- err
	}()
	waitPs(t, s, "sleep 1001", true)
	waitPs(t, s, "sleep 1002", true)
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the exec did not end after a process-scope stop")
	}
	waitPs(t, s, "sleep 1001", false)
	waitPs(t, s, "sleep 1002", true) // the careless part: it escaped
}

// waitPs waits until a process with these args is (or is no longer) in
// the container, as its own ps sees it.
func waitPs(t *testing.T, s targets.Session, args string, want bool) {
	t.Helper()
	var out string
	for i := 0; i < 100; i++ {
		_, out, _ = run(t, s, "", "/bin/busybox", "ps", "-o", "args")
		if strings.Contains(out, args) == want {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%q present = %v, want %v; ps:\n%s", args, !want, want, out)
}
