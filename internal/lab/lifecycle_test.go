package lab_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
)

func TestUpCloseLeavesNoNamespace(t *testing.T) {
	needLab(t)
	ctx := context.Background()
	var log bytes.Buffer
	l, err := lab.Up(ctx, lab.Options{ID: "beef01", HitLog: &log})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	if l.Name() != "gh-beef01" {
		t.Errorf("Name = %q", l.Name())
	}
	nw := attach(t, l, "c1")
	if _, err := l.Attach(ctx, "c1"); err == nil {
		t.Error("attaching the same session twice succeeded")
	}
	if got := labNamespaces(t, l.Name()); len(got) != 2 {
		t.Errorf("namespaces while up = %v, want lab and one session", got)
	}
	c, err := dial(ctx, nw, "tcp", "203.0.113.10:9000")
	if err != nil {
		t.Fatalf("dial callback: %v", err)
	}
	_, _ = c.Write([]byte("hi"))
	c.Close()
	waitHit(t, l, "c1", func(h evidence.Hit) bool { return h.Proto == "tcp" })
	if err := l.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if left := labNamespaces(t, l.Name()); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	var h evidence.Hit
	if err := json.Unmarshal(bytes.SplitN(log.Bytes(), []byte("\n"), 2)[0], &h); err != nil || h.Session != "c1" {
		t.Errorf("hit log first line = %q (%v)", log.String(), err)
	}
	if len(l.Hits()) == 0 {
		t.Error("hits gone after Close; verdicts are made after the lab is down")
	}
}

func TestUpRefusesBadID(t *testing.T) {
	needLab(t)
	for _, id := range []string{"xyz1", "ABCD", "abc", "abcdef0"} {
		if l, err := lab.Up(context.Background(), lab.Options{ID: id}); err == nil {
			_ = l.Close(context.Background())
			t.Errorf("Up accepted id %q", id)
		}
	}
}

func TestSessionsAreAttributedAndRouted(t *testing.T) {
	l := upLab(t)
	ctx := context.Background()
	a, b := attach(t, l, "alpha"), attach(t, l, "beta")
	if a.IPv4 == b.IPv4 || a.IPv6 == b.IPv6 {
		t.Fatalf("sessions share an address: %+v %+v", a, b)
	}
	for _, nw := range []struct{ name, v4 string }{{"alpha", a.IPv4}, {"beta", b.IPv4}} {
		got, err := lab.ReadSysctl(lab.NetnsPath(l.Name()+"-"+nw.name), "net.ipv4.ping_group_range")
		if err != nil || strings.Join(strings.Fields(got), " ") != "0 2147483647" {
			t.Errorf("%s ping_group_range = %q (%v)", nw.name, got, err)
		}
	}
	for _, s := range []struct {
		name string
		addr string
	}{{"alpha", "203.0.113.10:9000"}, {"beta", "[2001:db8:cafe::10]:9000"}} {
		nw := a
		if s.name == "beta" {
			nw = b
		}
		c, err := dial(ctx, nw, "tcp", s.addr)
		if err != nil {
			t.Fatalf("%s dial: %v", s.name, err)
		}
		_, _ = c.Write([]byte("from-" + s.name))
		c.Close()
		waitHit(t, l, s.name, func(h evidence.Hit) bool { return h.Data == "from-"+s.name })
	}
	for _, h := range l.HitsFor("alpha") {
		if strings.Contains(h.Data, "from-beta") {
			t.Errorf("beta's hit attributed to alpha: %+v", h)
		}
	}

	// The lab forwards between sessions, so only the sandbox's own policy
	// can keep them apart (what the cross-session gate tests).
	var ln net.Listener
	if err := lab.InNetns(b.NetnsPath, func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(b.IPv4, "7000"))
		return err
	}); err != nil {
		t.Fatalf("listen in beta: %v", err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			_, _ = c.Write([]byte("hello alpha"))
			c.Close()
		}
	}()
	c, err := dial(ctx, a, "tcp", net.JoinHostPort(b.IPv4, "7000"))
	if err != nil {
		t.Fatalf("alpha -> beta: %v", err)
	}
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	buf := make([]byte, 32)
	n, _ := c.Read(buf)
	c.Close()
	if string(buf[:n]) != "hello alpha" {
		t.Errorf("alpha read %q from beta", buf[:n])
	}

	if err := l.Detach(ctx, "alpha"); err != nil {
		t.Fatalf("Detach: %v", err)
	}
	if _, err := os.Stat(a.NetnsPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("alpha's namespace still there after Detach: %v", err)
	}
	if err := l.Sealed(ctx); err != nil {
		t.Errorf("not sealed after Detach: %v", err)
	}
	// Index 1 is free again, but addresses go round robin: a packet still
	// in flight from alpha must not be pinned on the next session.
	if c := attach(t, l, "gamma"); c.IPv4 == a.IPv4 {
		t.Errorf("gamma got alpha's address %s straight after alpha left", c.IPv4)
	}
}

func TestSessionCannotReachOutside(t *testing.T) {
	l := upLab(t)
	nw := attach(t, l, "o1")
	// 192.0.2.1 is TEST-NET-1: even if it escaped it would reach no one.
	// The lab has no route for it, so the dial fails fast with an ICMP
	// unreachable from the lab rather than timing out.
	_, err := dial(context.Background(), nw, "tcp", "192.0.2.1:80")
	if err == nil {
		t.Fatal("session reached 192.0.2.1")
	}
	if !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("dial error %v, want unreachable", err)
	}
}

// TestThreadsStayInHostNamespace checks that every setns was undone: after
// the lab made its listeners and sessions, no thread of this process is
// left in a lab namespace, where it could run unrelated code.
func TestThreadsStayInHostNamespace(t *testing.T) {
	needLab(t)
	own, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	l := upLab(t)
	nw := attach(t, l, "t1")
	if _, err := client(nw).Get("http://203.0.113.100/v1/complete"); err != nil {
		t.Fatalf("inference: %v", err)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		ns, err := os.Readlink("/proc/self/task/" + task.Name() + "/ns/net")
		if err != nil {
			continue // the thread ended meanwhile
		}
		if ns != own {
			t.Errorf("thread %s is in %s, not the host namespace %s", task.Name(), ns, own)
		}
	}
}

// TestNeverAdoptsForeignNamespace: a namespace that already has the name a
// lab or session would take belongs to someone else (another run, a crash):
// Up and Attach refuse it and leave it in place.
func TestNeverAdoptsForeignNamespace(t *testing.T) {
	needLab(t)
	ctx := context.Background()
	const foreign = "gh-f0e1d2"
	runIP(t, "netns", "add", foreign)
	t.Cleanup(func() { _, _ = exec.Command("ip", "netns", "del", foreign).CombinedOutput() })
	if l, err := lab.Up(ctx, lab.Options{ID: "f0e1d2"}); err == nil {
		_ = l.Close(ctx)
		t.Fatal("Up adopted an existing namespace")
	}
	if _, err := os.Stat(lab.NetnsPath(foreign)); err != nil {
		t.Fatalf("failed Up removed a namespace it did not make: %v", err)
	}

	l := upLab(t)
	taken := l.Name() + "-taken"
	runIP(t, "netns", "add", taken)
	t.Cleanup(func() { _, _ = exec.Command("ip", "netns", "del", taken).CombinedOutput() })
	if _, err := l.Attach(ctx, "taken"); err == nil {
		t.Fatal("Attach adopted an existing namespace")
	}
	if _, err := os.Stat(lab.NetnsPath(taken)); err != nil {
		t.Fatalf("failed Attach removed a namespace it did not make: %v", err)
	}
	runIP(t, "netns", "del", taken) // before upLab's cleanup looks for leftovers
}
