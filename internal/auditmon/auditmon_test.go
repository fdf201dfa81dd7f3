package auditmon

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/internal/auid"
)

// The test binary doubles as the helper processes the real tests run.
func TestMain(m *testing.M) {
	switch os.Getenv("AUDITMON_HELPER") {
	case "act":
		// What a session does: connect to a closed loopback port, open a file.
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+os.Getenv("AUDITMON_PORT"), time.Second)
		if err == nil {
			c.Close()
		}
		if f, err := os.Open(os.Getenv("AUDITMON_PATH")); err == nil {
			f.Close()
		}
		os.Exit(0)
	case "hold":
		// A run that is killed with SIGKILL while its rules are in.
		s := New(0)
		if err := s.Start(context.Background()); err != nil {
			fmt.Println("start:", err)
			os.Exit(1)
		}
		n, _ := strconv.ParseUint(os.Getenv("AUDITMON_AUID"), 10, 32)
		if err := s.Register(detect.SessionKey{LoginUID: uint32(n)}); err != nil {
			fmt.Println("register:", err)
			os.Exit(1)
		}
		fmt.Println("ready")
		select {}
	}
	os.Exit(m.Run())
}

// needAudit skips, with the reason, where this machine cannot run the
// source; it returns audit's enabled state before the test.
func needAudit(t *testing.T) uint32 {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_AUDIT_CONTROL in the initial namespaces)")
	}
	en, pid, err := Status()
	if err != nil {
		t.Skipf("no audit here: %v", err)
	}
	if err := checkOwner(pid, os.Getpid()); err != nil {
		t.Skipf("audit is taken: %v", err)
	}
	return en
}

// launch runs the "act" helper with a fresh login uid of its own; before
// it starts, ready is called with that uid (to register it).
func launch(t *testing.T, port int, path string, ready func(uint32) error) uint32 {
	t.Helper()
	type res struct {
		id  uint32
		err error
	}
	done := make(chan res, 1)
	go func() {
		// The login uid is set on this thread, which dies with the
		// goroutine (never unlocked): no other goroutine inherits it.
		runtime.LockOSThread()
		id, err := auid.Set()
		if err == nil {
			err = ready(id)
		}
		if err == nil {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "AUDITMON_HELPER=act", "AUDITMON_PORT="+strconv.Itoa(port), "AUDITMON_PATH="+path)
			if out, rerr := cmd.CombinedOutput(); rerr != nil {
				err = fmt.Errorf("helper: %v: %s", rerr, out)
			}
		}
		done <- res{id, err}
	}()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.id
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return p
}

func ours(t *testing.T, pid int) []string {
	t.Helper()
	left, err := Leftover()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range left {
		if strings.Contains(r, key(pid, "")) {
			out = append(out, r)
		}
	}
	return out
}

func TestAuditSeesTheRegisteredSessionOnly(t *testing.T) {
	before := needAudit(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := New(0)
	if err := s.Start(ctx); err != nil {
		var oe *OwnedError
		if errors.Is(err, ErrUnsupported) || errors.As(err, &oe) {
			t.Skipf("audit source cannot run here: %v", err)
		}
		t.Fatal(err)
	}
	defer s.Close()
	if en, pid, err := Status(); err != nil || en != 1 || pid != os.Getpid() {
		t.Fatalf("after Start: enabled %d, daemon pid %d (%v); want 1 and ours %d", en, pid, err, os.Getpid())
	}

	dir := t.TempDir()
	watchedPath, otherPath := filepath.Join(dir, "watched-canary"), filepath.Join(dir, "other-canary")
	for _, p := range []string{watchedPath, otherPath} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	watchedPort, otherPort := closedPort(t), closedPort(t)
	var watchedKey detect.SessionKey
	watched := launch(t, watchedPort, watchedPath, func(id uint32) error {
		watchedKey = detect.SessionKey{LoginUID: id}
		return s.Register(watchedKey)
	})
	if got := ours(t, os.Getpid()); len(got) != 3 {
		t.Fatalf("rules while a session is registered: %q, want 3", got)
	}
	other := launch(t, otherPort, otherPath, func(uint32) error { return nil }) // never registered

	wantConn := fmt.Sprintf("127.0.0.1:%d", watchedPort)
	var gotConn, gotOpen bool
	var events []detect.Event
	deadline := time.After(10 * time.Second)
	settle := (<-chan time.Time)(nil)
loop:
	for {
		select {
		case e, ok := <-s.Events():
			if !ok {
				break loop
			}
			events = append(events, e)
			if e.Key.LoginUID == watched && e.Kind == detect.KindConnect && e.Object == wantConn && e.Rule == "connect" {
				gotConn = true
			}
			if e.Key.LoginUID == watched && e.Kind == detect.KindOpen && e.Object == watchedPath && e.Rule == "open" {
				gotOpen = true
			}
			if gotConn && gotOpen && settle == nil {
				settle = time.After(time.Second) // time for the other session's records, if any were coming
			}
		case <-settle:
			break loop
		case <-deadline:
			break loop
		}
	}
	if !gotConn || !gotOpen {
		t.Errorf("watched session (auid %d): connect %s seen %v, open %s seen %v; %d events, %d dropped", watched, wantConn, gotConn, watchedPath, gotOpen, len(events), s.Dropped())
	}
	for _, e := range events {
		if e.Source != "audit" || e.Received.IsZero() || e.EventTime.IsZero() {
			t.Errorf("event without source or times: %+v", e)
		}
		if e.Key.LoginUID != watched || strings.Contains(e.Object, strconv.Itoa(otherPort)) || e.Object == otherPath {
			t.Errorf("an event of another session (auid %d) or of nobody's: %s %s auid %d", other, e.Kind, e.Object, e.Key.LoginUID)
		}
		if e.Received.Sub(e.EventTime) > 5*time.Second || e.EventTime.Sub(e.Received) > time.Second {
			t.Errorf("event time %v far from receipt %v", e.EventTime, e.Received)
		}
	}
	t.Logf("%d events from the watched session, %d dropped, %d without object", len(events), s.Dropped(), s.NoObject())

	s.Unregister(watchedKey)
	if got := ours(t, os.Getpid()); len(got) != 0 {
		t.Errorf("rules after Unregister: %q", got)
	}
	if err := s.Register(watchedKey); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if got := ours(t, os.Getpid()); len(got) != 0 {
		t.Errorf("rules left after Close: %q", got)
	}
	if en, pid, err := Status(); err != nil || en != before || pid != 0 {
		t.Errorf("after Close: enabled %d, daemon pid %d (%v); want %d as before and 0", en, pid, err, before)
	}
}

func TestAKilledRunsRulesAreSweptAtTheNextStart(t *testing.T) {
	before := needAudit(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AUDITMON_HELPER=hold", "AUDITMON_AUID=1073741999")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		_ = cmd.Wait()
		var oe *OwnedError
		if strings.Contains(line, ErrUnsupported.Error()) || errors.As(err, &oe) {
			t.Skipf("audit source cannot run here: %s", line)
		}
		t.Fatalf("helper: %q", line)
	}
	child := cmd.Process.Pid
	if got := ours(t, child); len(got) != 3 {
		t.Fatalf("the helper's rules: %q, want 3", got)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// Rules are kernel state: SIGKILL leaves them, which is why the sweep exists.
	if got := ours(t, child); len(got) != 3 {
		t.Fatalf("after SIGKILL the helper's rules are %q; want its 3 still there", got)
	}

	s := New(0)
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start after a killed run (its pid %d was the daemon): %v", child, err)
	}
	if got := ours(t, child); len(got) != 0 {
		t.Errorf("Start did not sweep the killed run's rules: %q", got)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if left, err := Leftover(); err != nil || len(left) != 0 {
		t.Errorf("gatehouse rules left: %q (%v)", left, err)
	}
	if en, pid, err := Status(); err != nil || en != before || pid != 0 {
		t.Errorf("after the sweep and Close: enabled %d, daemon pid %d (%v); want %d as before and 0", en, pid, err, before)
	}
}

func TestSweepRemovesOnlyDeadRunsRules(t *testing.T) {
	needAudit(t)
	ctl, _, err := control()
	if err != nil {
		t.Skipf("no audit here: %v", err)
	}
	defer ctl.Close()
	const dead = 1<<22 + 4321 // above pid_max: no such process
	deadRules, err := sessionRules(dead, 1073741998)
	if err != nil {
		t.Fatal(err)
	}
	liveRules, err := sessionRules(1, 1073741997) // pid 1 is alive: another run's, left alone
	if err != nil {
		t.Fatal(err)
	}
	defer func() { // before ctl closes
		for _, r := range append(deadRules, liveRules...) {
			_ = ctl.DeleteRule(r)
		}
		if got := ours(t, 1); len(got) != 0 {
			t.Errorf("the test's own rules left: %q", got)
		}
	}()
	for _, r := range append(deadRules, liveRules...) {
		if err := ctl.AddRule(r); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 3 || len(ours(t, dead)) != 0 {
		t.Errorf("swept %q; dead run's rules left %q", removed, ours(t, dead))
	}
	if got := ours(t, 1); len(got) != 3 {
		t.Errorf("a live run's rules: %q, want its 3 untouched", got)
	}
}
