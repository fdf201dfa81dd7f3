package monitor_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/internal/monitor"
)

// linger starts the "linger" child in cg and waits until it is ready; send
// a line on the returned writer to make it do its after-stop syscall.
func linger(t *testing.T, cg cgroup) (*exec.Cmd, io.WriteCloser, *bufio.Scanner) {
	t.Helper()
	cmd, out := childCmd(t, "linger", cg)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	waitLine(t, sc, "ready")
	return cmd, in, sc
}

func waitLine(t *testing.T, sc *bufio.Scanner, want string) {
	t.Helper()
	for sc.Scan() {
		if sc.Text() == want {
			return
		}
	}
	t.Fatalf("child ended before saying %q", want)
}

// TestAliveAfterStopAndExit: a process of a registered cgroup marked
// stopped that makes a syscall is reported alive after stop (by the rules'
// alive-after-stop rule, once per process); killed, its exit arrives with a
// kernel time, and LastExit says the cgroup is empty since then. The same
// process in an unregistered cgroup gives nothing, and MarkStopped refuses
// a cgroup that is not registered.
func TestAliveAfterStopAndExit(t *testing.T) {
	m := startMonitor(t, monitor.Options{})
	a, b := newCgroup(t), newCgroup(t)
	if err := m.Register(a.id); err != nil {
		t.Fatal(err)
	}
	if err := m.MarkStopped(b.id, time.Now()); !errors.Is(err, monitor.ErrNotRegistered) {
		t.Fatalf("MarkStopped of an unregistered cgroup: %v, want ErrNotRegistered", err)
	}
	c := collect(m)
	cmdA, inA, scA := linger(t, a)
	cmdB, inB, scB := linger(t, b)

	// Running, not stopped: its syscalls are no rule hits.
	time.Sleep(100 * time.Millisecond)
	if evs := c.snapshot(); len(evs) > 0 {
		t.Fatalf("events before the stop: %+v", evs[0])
	}
	stop := time.Now()
	if err := m.MarkStopped(a.id, stop); err != nil {
		t.Fatal(err)
	}
	for _, in := range []io.Writer{inA, inB} {
		if _, err := io.WriteString(in, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	waitLine(t, scA, "done")
	waitLine(t, scB, "done")
	pidA := cmdA.Process.Pid
	isAlive := func(e detect.Event) bool { return e.Kind == detect.KindAliveAfter && e.Key.CgroupID == a.id }
	evs := c.waitFor(3*time.Second, func(evs []detect.Event) bool { return slices.ContainsFunc(evs, isAlive) })
	var alive []detect.Event
	for _, e := range evs {
		if isAlive(e) {
			alive = append(alive, e)
		}
	}
	if len(alive) != 1 {
		t.Fatalf("%d alive-after-stop events for the stopped process, want 1 (once per process): %+v", len(alive), alive)
	}
	e := alive[0]
	if e.Rule != "process-alive-after-stop" || e.Key.PID != pidA || e.Object != "monitor.test" {
		t.Errorf("alive event: rule %q pid %d object %q; want process-alive-after-stop, %d, monitor.test", e.Rule, e.Key.PID, e.Object, pidA)
	}
	if e.EventTime.Before(stop.Add(-5 * time.Millisecond)) {
		t.Errorf("alive event's kernel time %v is before the stop %v", e.EventTime, stop)
	}
	t.Logf("alive after stop: %s (%s) %v after the stop", e.Object, monitor.Describe(e.Raw), e.EventTime.Sub(stop))

	// Killed: its exit is delivered (the cgroup is stopped) with the
	// kernel's time, and LastExit says the cgroup is empty since then.
	before, err := m.LastExit(context.Background(), a.id)
	if err != nil {
		t.Fatal(err)
	}
	if before.Empty {
		t.Fatal("LastExit says empty while the child runs")
	}
	kill := time.Now()
	if err := cmdA.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmdA.Wait()
	reaped := time.Now()
	isExit := func(e detect.Event) bool {
		return e.Kind == detect.KindExit && e.Key.CgroupID == a.id && e.Object == strconv.Itoa(pidA)
	}
	evs = c.waitFor(3*time.Second, func(evs []detect.Event) bool { return slices.ContainsFunc(evs, isExit) })
	i := slices.IndexFunc(evs, isExit)
	if i < 0 {
		t.Fatal("no exit event for the killed process")
	}
	x := evs[i]
	if x.Rule != "" {
		t.Errorf("exit event with rule %q: an exit is no rule hit", x.Rule)
	}
	if x.EventTime.Before(kill.Add(-5*time.Millisecond)) || x.EventTime.After(reaped.Add(5*time.Millisecond)) {
		t.Errorf("exit's kernel time %v outside [kill %v, reaped %v]", x.EventTime, kill, reaped)
	}
	var gone detect.Exits
	end := time.Now().Add(3 * time.Second)
	for {
		if gone, err = m.LastExit(context.Background(), a.id); err != nil {
			t.Fatal(err)
		}
		if gone.Empty || time.Now().After(end) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	at, ok := gone.Gone()
	if !ok {
		t.Fatalf("LastExit after the kill: %+v, want empty with exits", gone)
	}
	if gone.LastPID != pidA || at.Before(x.EventTime) || at.After(reaped.Add(5*time.Millisecond)) {
		t.Errorf("LastExit %+v: want pid %d, the last task's exit at or after %v and before the reap %v", gone, pidA, x.EventTime, reaped)
	}
	t.Logf("killed at +0; exit event (kernel) at %v; gone at %v (after %d task exits); reaped at %v",
		x.EventTime.Sub(kill), at.Sub(kill), gone.Exits, reaped.Sub(kill))

	// The unregistered cgroup's process did the same and is killed too:
	// nothing of it arrives.
	_ = cmdB.Process.Signal(syscall.SIGKILL)
	_ = cmdB.Wait()
	if err := m.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, e := range c.snapshot() {
		if e.Key.CgroupID == b.id || e.Key.PID == cmdB.Process.Pid {
			t.Errorf("event from the unregistered cgroup: %s %s", e.Kind, e.Object)
		}
	}
	if _, err := m.LastExit(context.Background(), b.id); !errors.Is(err, monitor.ErrNotRegistered) {
		t.Errorf("LastExit of an unregistered cgroup: %v", err)
	}
	if d := m.DropCounts(); d.Total() != 0 {
		t.Errorf("drops: %+v", d)
	}
}

// TestExitsOnlyWhenAsked: without Exits (and no stop), a registered
// cgroup's process exits feed LastExit but are not delivered; with Exits
// they are, one per process (not per thread).
func TestExitsOnlyWhenAsked(t *testing.T) {
	for _, deliver := range []bool{false, true} {
		t.Run("exits="+strconv.FormatBool(deliver), func(t *testing.T) {
			m := startMonitor(t, monitor.Options{Exits: deliver})
			cg := newCgroup(t)
			if err := m.Register(cg.id); err != nil {
				t.Fatal(err)
			}
			c := collect(m)
			_, pid := runChild(t, "actions", cg, "GH_MONITOR_FILE=/etc/hostname")
			// The child's /bin/true and /bin/sh are processes too.
			var x detect.Exits
			var err error
			end := time.Now().Add(3 * time.Second)
			for x, err = m.LastExit(context.Background(), cg.id); err == nil && !x.Empty && time.Now().Before(end); x, err = m.LastExit(context.Background(), cg.id) {
				time.Sleep(10 * time.Millisecond)
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := x.Gone(); !ok || x.LastPID != pid {
				t.Fatalf("LastExit %+v: want gone, last the child %d", x, pid)
			}
			// LastExit syncs the decoder, but the collector may not yet
			// have taken the last exits off the channel.
			hasChild := func(evs []detect.Event) bool {
				return slices.ContainsFunc(evs, func(e detect.Event) bool {
					return e.Kind == detect.KindExit && e.Object == strconv.Itoa(pid)
				})
			}
			wait := 3 * time.Second
			if !deliver {
				wait = 200 * time.Millisecond // time for a wrongly delivered exit to show
			}
			var exits, described []string
			for _, e := range c.waitFor(wait, hasChild) {
				if e.Kind == detect.KindExit {
					exits = append(exits, e.Object)
					described = append(described, monitor.Describe(e.Raw))
				}
			}
			switch {
			case !deliver && len(exits) > 0:
				t.Errorf("exits delivered without Exits: %v", exits)
			case deliver && !slices.Contains(exits, strconv.Itoa(pid)):
				t.Errorf("exits delivered: %v, want the child %d among them", exits, pid)
			case deliver && len(exits) < 3:
				// The child, its /bin/true and its /bin/sh at least.
				t.Errorf("exits delivered: %v, want at least 3 processes", exits)
			}
			// One per process, though the child (a Go program) ended
			// several threads: no pid twice.
			sorted := slices.Clone(exits)
			slices.Sort(sorted)
			if len(slices.Compact(sorted)) != len(exits) {
				t.Errorf("a process's exit delivered twice: %v", exits)
			}
			t.Logf("%d task exits, %d process exits delivered: %s", x.Exits, len(exits), strings.Join(described, "; "))
		})
	}
}

// TestDropReasons: a connect whose destination the kernel cannot read at
// syscall entry is lost, and said so by reason — a bad pointer and a page
// not yet faulted in — while nothing else is counted.
func TestDropReasons(t *testing.T) {
	m := startMonitor(t, monitor.Options{All: true})
	cg := newCgroup(t)
	if err := m.Register(cg.id); err != nil {
		t.Fatal(err)
	}
	c := collect(m)
	runChild(t, "badaddr", cg)
	if err := m.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	d := m.DropCounts()
	if d.AddrUnreadable != 2 || d.RingFull != 0 || d.MsgUnreadable != 0 || d.Channel != 0 {
		t.Errorf("drops %+v, want 2 unreadable destinations and nothing else", d)
	}
	if m.Dropped() != d.Total() {
		t.Errorf("Dropped %d, DropCounts total %d", m.Dropped(), d.Total())
	}
	for _, e := range c.snapshot() {
		if e.Kind == detect.KindConnect {
			t.Errorf("a connect with an unreadable destination was delivered: %s", e.Object)
		}
	}
}
