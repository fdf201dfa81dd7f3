package monitor_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/internal/monitor"
)

// TestMonitorSeesSessionActivity: a child in a registered cgroup (and a
// network namespace with only lo) connects to the callback over IPv4 and
// IPv6, sends DNS queries (sendto with a destination, and write on a socket
// connected to port 53), opens a planted credential and runs /bin/true and
// a shell. Each must arrive with its kind, object, rule, cgroup and pid; the
// same child in an unregistered cgroup must produce nothing.
func TestMonitorSeesSessionActivity(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(secret, []byte("canary"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := startMonitor(t, monitor.Options{All: true, Params: monitor.Params{"credentials": {secret}}})
	a, b := newCgroup(t), newCgroup(t)
	if err := m.Register(a.id); err != nil {
		t.Fatal(err)
	}
	c := collect(m)

	const loginuid = 424242
	marks, pid := runChild(t, "actions", a, "GH_MONITOR_FILE="+secret, "GH_MONITOR_LOGINUID=424242")
	marksB, _ := runChild(t, "actions", b, "GH_MONITOR_FILE="+secret)

	want := []struct {
		mark, kind, object, rule string
	}{
		{"connect4", detect.KindConnect, "203.0.113.10:80", "connect-outside-allowlist"},
		{"connect6", detect.KindConnect, "[2001:db8:cafe::10]:80", "connect-outside-allowlist"},
		{"dns-sendto", detect.KindDNS, "t1.oob.gatehouse.test", "dns-query-under-canary-zone"},
		{"dns-write", detect.KindDNS, "127.0.0.53:53", "dns-not-to-resolver"},
		{"dns-write", detect.KindDNS, "t2.oob.gatehouse.test", "dns-query-under-canary-zone"},
		{"open", detect.KindOpen, secret, "read-of-planted-credential"},
		{"exec-true", detect.KindExec, "/bin/true", ""},
		{"exec-sh", detect.KindExec, "/bin/sh", "exec-of-a-shell"},
	}
	find := func(evs []detect.Event, kind, object string) (detect.Event, bool) {
		for _, e := range evs {
			if e.Key.CgroupID == a.id && e.Kind == kind && e.Object == object {
				return e, true
			}
		}
		return detect.Event{}, false
	}
	evs := c.waitFor(5*time.Second, func(evs []detect.Event) bool {
		for _, w := range want {
			if _, ok := find(evs, w.kind, w.object); !ok {
				return false
			}
		}
		return true
	})
	for _, w := range want {
		e, ok := find(evs, w.kind, w.object)
		if !ok {
			t.Errorf("no %s event for %s from cgroup %d", w.kind, w.object, a.id)
			continue
		}
		if e.Rule != w.rule {
			t.Errorf("%s %s: rule %q, want %q", w.kind, w.object, e.Rule, w.rule)
		}
		if e.Source != "builtin" || len(e.Raw) == 0 {
			t.Errorf("%s %s: source %q, %d raw bytes", w.kind, w.object, e.Source, len(e.Raw))
		}
		if e.Key.LoginUID != loginuid { // set by the child, read from task_struct via BTF
			t.Errorf("%s %s: loginuid %d, want %d", w.kind, w.object, e.Key.LoginUID, loginuid)
		}
		if w.kind != detect.KindExec && e.Key.PID != pid { // exec happens in a forked child
			t.Errorf("%s %s: pid %d, want %d", w.kind, w.object, e.Key.PID, pid)
		}
		before, ok := marks[w.mark]
		if !ok {
			t.Fatalf("child did not mark %s", w.mark)
		}
		lat := e.Received.Sub(before)
		// The kernel's event time, converted, lies between the mark and
		// the receipt (a clock check, allowing for the offset's error).
		if e.EventTime.Before(before.Add(-5*time.Millisecond)) || e.EventTime.After(e.Received.Add(5*time.Millisecond)) {
			t.Errorf("%s %s: event time %v outside [%v, %v]", w.kind, w.object, e.EventTime, before, e.Received)
		}
		if lat < 0 {
			t.Errorf("%s %s: received %v before the attempt began", w.kind, w.object, lat)
		}
		t.Logf("%-8s %-30s rule=%-28s latency=%v", w.kind, w.object, e.Rule, lat)
	}
	if len(marksB) < len(marks) {
		t.Fatalf("the unregistered child did not run all its attempts: %v", marksB)
	}
	time.Sleep(300 * time.Millisecond)
	for _, e := range c.snapshot() {
		if e.Key.CgroupID == b.id {
			t.Errorf("event from the unregistered cgroup: %s %s", e.Kind, e.Object)
		}
	}
	if d := m.Dropped(); d != 0 {
		t.Errorf("%d events dropped", d)
	}

	// Unregistered, a cgroup's activity stops being shipped.
	if err := m.Unregister(a.id); err != nil {
		t.Fatal(err)
	}
	n := len(c.snapshot())
	runChild(t, "actions", a, "GH_MONITOR_FILE="+secret)
	time.Sleep(300 * time.Millisecond)
	for _, e := range c.snapshot()[n:] {
		if e.Key.CgroupID == a.id {
			t.Errorf("event after unregister: %s %s", e.Kind, e.Object)
		}
	}
}

// TestSeccompRefusedCallIsNotSeen records a fact about sys_enter: the
// kernel runs seccomp before the tracepoint, so a connect a seccomp filter
// refuses is never seen by this monitor ("prevented before observable"),
// while the same child's earlier, unfiltered connect is.
func TestSeccompRefusedCallIsNotSeen(t *testing.T) {
	m := startMonitor(t, monitor.Options{All: true})
	cg := newCgroup(t)
	if err := m.Register(cg.id); err != nil {
		t.Fatal(err)
	}
	c := collect(m)
	runChild(t, "seccomp", cg)
	seen := func(evs []detect.Event, obj string) bool {
		return slices.ContainsFunc(evs, func(e detect.Event) bool { return e.Key.CgroupID == cg.id && e.Object == obj })
	}
	evs := c.waitFor(3*time.Second, func(evs []detect.Event) bool { return seen(evs, "203.0.113.10:80") })
	if !seen(evs, "203.0.113.10:80") {
		t.Fatal("the control connect was not seen")
	}
	time.Sleep(300 * time.Millisecond)
	if seen(c.snapshot(), "203.0.113.10:81") {
		t.Error("the seccomp-refused connect was seen at sys_enter: update docs/detection.md")
	}
}

// TestOnlyRuleHitsByDefault: without All, an exec of /bin/true (no rule)
// is not delivered while the shell is.
func TestOnlyRuleHitsByDefault(t *testing.T) {
	m := startMonitor(t, monitor.Options{})
	cg := newCgroup(t)
	if err := m.Register(cg.id); err != nil {
		t.Fatal(err)
	}
	c := collect(m)
	runChild(t, "actions", cg, "GH_MONITOR_FILE=/etc/hostname")
	evs := c.waitFor(3*time.Second, func(evs []detect.Event) bool {
		return slices.ContainsFunc(evs, func(e detect.Event) bool { return e.Object == "/bin/sh" })
	})
	var sawShell bool
	for _, e := range evs {
		if e.Rule == "" {
			t.Errorf("delivered without a rule: %s %s", e.Kind, e.Object)
		}
		sawShell = sawShell || e.Rule == "exec-of-a-shell"
	}
	if !sawShell {
		t.Error("the shell exec was not delivered")
	}
}

// TestNothingLeftAfterClose: Close frees the program and every map.
func TestNothingLeftAfterClose(t *testing.T) {
	m := startMonitor(t, monitor.Options{})
	ids, err := m.IDs()
	if err != nil {
		t.Fatal(err)
	}
	assertLoaded(t, ids)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	assertGone(t, ids)
	if _, ok := <-m.Events(); ok {
		t.Error("Events still open after Close")
	}
}

// TestNothingLeftAfterKill: a process that loaded the monitor and is
// killed with SIGKILL (no Close) leaves no program or map behind.
func TestNothingLeftAfterKill(t *testing.T) {
	needRoot(t)
	cmd, out := childCmd(t, "hold", newCgroup(t))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var ids monitor.KernelIDs
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 1 && f[0] == "ready" {
			break
		}
		if len(f) != 2 {
			continue
		}
		n, _ := strconv.ParseUint(f[1], 10, 32)
		switch f[0] {
		case "prog":
			ids.Programs = append(ids.Programs, ebpf.ProgramID(n))
		case "link":
			ids.Links = append(ids.Links, link.ID(n))
		case "map":
			ids.Maps = append(ids.Maps, ebpf.MapID(n))
		}
	}
	if len(ids.Programs) == 0 {
		_ = cmd.Wait()
		t.Skip("the child could not load the monitor (see its stderr)")
	}
	assertLoaded(t, ids)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	assertGone(t, ids)
	if left := ours(t); len(left) > 0 {
		t.Logf("other gh_ programs loaded right now (another run?): %v", left)
	}
}

func assertLoaded(t *testing.T, ids monitor.KernelIDs) {
	t.Helper()
	// sys_enter and sched_process_exit: two programs, two links, six maps.
	if len(ids.Programs) != 2 || len(ids.Links) != 2 || len(ids.Maps) != 6 {
		t.Fatalf("%d programs, %d links, %d maps; want 2, 2 and 6", len(ids.Programs), len(ids.Links), len(ids.Maps))
	}
	for _, id := range ids.Programs {
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			t.Fatalf("program %d not found while loaded: %v", id, err)
		}
		info, err := p.Info()
		p.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(info.Name, "gh_") {
			t.Errorf("program %d is named %q, want the gh_ prefix", id, info.Name)
		}
	}
	for _, id := range ids.Links {
		l, err := link.NewFromID(id)
		if err != nil {
			t.Fatalf("link %d not found while attached: %v", id, err)
		}
		l.Close()
	}
}

// assertGone waits (the kernel frees programs after an RCU grace period)
// until no id of ours exists: program, link or map.
func assertGone(t *testing.T, ids monitor.KernelIDs) {
	t.Helper()
	end := time.Now().Add(5 * time.Second)
	for {
		var left []string
		for _, id := range ids.Programs {
			if p, err := ebpf.NewProgramFromID(id); err == nil {
				p.Close()
				left = append(left, "program "+strconv.Itoa(int(id)))
			} else if !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("program %d: %v", id, err)
			}
		}
		for _, id := range ids.Links {
			if l, err := link.NewFromID(id); err == nil {
				l.Close()
				left = append(left, "link "+strconv.Itoa(int(id)))
			} else if !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("link %d: %v", id, err)
			}
		}
		for _, id := range ids.Maps {
			if mp, err := ebpf.NewMapFromID(id); err == nil {
				mp.Close()
				left = append(left, "map "+strconv.Itoa(int(id)))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("still loaded 5s later: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ours lists loaded programs with the gh_ prefix.
func ours(t *testing.T) []string {
	var names []string
	var id ebpf.ProgramID
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil {
			break
		}
		id = next
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue
		}
		if info, err := p.Info(); err == nil && strings.HasPrefix(info.Name, "gh_") {
			names = append(names, info.Name+"#"+strconv.Itoa(int(id)))
		}
		p.Close()
	}
	sort.Strings(names)
	return names
}

// TestContextEndCloses: the ctx given to Start ending closes the monitor
// (Events closes, nothing left loaded).
func TestContextEndCloses(t *testing.T) {
	needRoot(t)
	m, err := monitor.New(monitor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := m.Start(ctx); err != nil {
		if errors.Is(err, monitor.ErrUnsupported) {
			t.Skipf("BPF unavailable here: %v", err)
		}
		t.Fatal(err)
	}
	ids, err := m.IDs()
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case _, ok := <-m.Events():
		if ok {
			t.Fatal("an event on an idle monitor with nothing registered")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Events not closed 2s after ctx ended")
	}
	assertGone(t, ids)
	if err := m.Close(); err != nil {
		t.Fatalf("Close after ctx end: %v", err)
	}
	if err := m.Register(1); !errors.Is(err, monitor.ErrClosed) {
		t.Errorf("Register after close: %v, want ErrClosed", err)
	}
}
