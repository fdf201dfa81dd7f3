package probe_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/posixmq"
	"github.com/gatehouse-dev/gatehouse/internal/probe"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// A send's and a receive's active windows lie inside the attempt and
// cover the time they were at work; a receive on a folder that is not
// there never listened, so it has no window at all.
func TestChannelAttemptsReportActiveWindows(t *testing.T) {
	dir := t.TempDir()
	reps := runParallel(t,
		wire.Step{ID: "send", Kind: wire.KindSend, Target: "dir:" + dir, Payload: tok("xa"), DurationMS: 800},
		wire.Step{ID: "recv", Kind: wire.KindReceive, Target: "dir:" + dir, Payload: tok("xb"), DurationMS: 800},
		wire.Step{ID: "absent", Kind: wire.KindReceive, Target: "dir:" + filepath.Join(dir, "nope"), Payload: tok("xb"), DurationMS: 800},
	)
	for _, id := range []string{"send", "recv"} {
		r := reps[id]
		end := r.Start.Add(time.Duration(r.DurationMS * float64(time.Millisecond)))
		switch {
		case r.ActiveFrom.IsZero() || r.ActiveTo.IsZero():
			t.Errorf("%s: no active window: %+v", id, r)
		case r.ActiveFrom.Before(r.Start) || r.ActiveTo.After(end.Add(time.Millisecond)):
			t.Errorf("%s: window %v..%v outside the attempt %v..%v", id, r.ActiveFrom, r.ActiveTo, r.Start, end)
		case r.ActiveTo.Sub(r.ActiveFrom) < 700*time.Millisecond:
			t.Errorf("%s: active %v, want about the 800 ms it ran", id, r.ActiveTo.Sub(r.ActiveFrom))
		}
	}
	if r := reps["absent"]; !r.ActiveFrom.IsZero() || r.Outcome == wire.OutcomeCompleted {
		t.Errorf("a receive on a missing folder: %s with window %v..%v, want no window and not completed", r.Outcome, r.ActiveFrom, r.ActiveTo)
	}
}

// A POSIX message queue carries a value from a sender to the receiver
// that owns the queue, and the receiver removes its queue when done.
func TestMessageQueueCarriesAValue(t *testing.T) {
	name := "/gatehouse-test-" + tok("")
	theirs, mine := tok("xa"), tok("xb")
	reps := runParallel(t,
		wire.Step{ID: "send", Kind: wire.KindSend, Target: "mq:" + name, Payload: theirs, DurationMS: 1200},
		wire.Step{ID: "recv", Kind: wire.KindReceive, Target: "mq:" + name, Payload: mine, DurationMS: 1200},
	)
	if r := reps["recv"]; strings.Contains(r.Error, "not supported") {
		t.Skipf("no POSIX message queues here: %s", r.Error)
	}
	if r := reps["recv"]; r.Outcome != wire.OutcomeCompleted || !strings.Contains(r.Excerpt, theirs) || !strings.Contains(r.Excerpt, "posix mqueue "+name) {
		t.Errorf("receive: %s (%s), excerpt %q", r.Outcome, r.Error, r.Excerpt)
	}
	if r := reps["send"]; r.Outcome != wire.OutcomeCompleted {
		t.Errorf("send: %s (%s)", r.Outcome, r.Error)
	}
	// Gone: a send now finds no queue (it never creates one).
	reps = runParallel(t, wire.Step{ID: "late", Kind: wire.KindSend, Target: "mq:" + name, Payload: theirs, DurationMS: 200})
	if r := reps["late"]; r.Outcome == wire.OutcomeCompleted || !strings.Contains(r.Error, "no such file") {
		t.Errorf("send after the receiver ended: %s (%s), want the queue gone", r.Outcome, r.Error)
	}
	if err := posixmq.Unlink(name); err != nil {
		t.Errorf("unlink of a missing queue: %v", err)
	}
}

// Another process that carries a value in its argv and environment shows
// it in /proc: the receive reports it with the file it was in, and the
// send (which only checks that such a process of its own is visible)
// completes.
func TestProcChannelsReadOtherProcesses(t *testing.T) {
	theirs, mine := tok("xa"), tok("xb")
	cmd := exec.Command("/bin/sh", "-c", "sleep 5; true", theirs)
	cmd.Env = append(os.Environ(), "GATEHOUSE_HOLD="+theirs)
	if err := cmd.Start(); err != nil {
		t.Skipf("no /bin/sh: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	reps := runParallel(t,
		wire.Step{ID: "cmdline", Kind: wire.KindReceive, Target: "proc:cmdline", Payload: mine, DurationMS: 400},
		wire.Step{ID: "environ", Kind: wire.KindReceive, Target: "proc:environ", Payload: mine, DurationMS: 400},
		wire.Step{ID: "offer", Kind: wire.KindSend, Target: "proc:cmdline", Payload: theirs, DurationMS: 300},
		wire.Step{ID: "bad", Kind: wire.KindReceive, Target: "proc:status", Payload: mine, DurationMS: 300},
	)
	for _, id := range []string{"cmdline", "environ"} {
		r := reps[id]
		if !strings.Contains(r.Excerpt, theirs) || !strings.Contains(r.Excerpt, "/proc/") || r.ActiveFrom.IsZero() {
			t.Errorf("%s: %s (%s), excerpt %q, window from %v", id, r.Outcome, r.Error, r.Excerpt, r.ActiveFrom)
		}
	}
	if r := reps["offer"]; r.Outcome != wire.OutcomeCompleted {
		t.Errorf("offer: %s (%s)", r.Outcome, r.Error)
	}
	if r := reps["bad"]; r.Outcome == wire.OutcomeCompleted {
		t.Errorf("proc:status is no channel, yet %s", r.Outcome)
	}
}

// `probe hold` says it holds, stays while its input is open, and ends as
// soon as the input ends.
func TestHoldEndsWhenItsInputEnds(t *testing.T) {
	pr, pw := io.Pipe()
	out := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- probe.Main(context.Background(), []string{"hold", tok("xa"), t.TempDir()}, pr, out, io.Discard)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.HasPrefix(out.String(), wire.HoldReady+" ") {
		if time.Now().After(deadline) {
			t.Fatalf("no %q line: %q", wire.HoldReady, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case code := <-done:
		t.Fatalf("ended (%d) with its input still open", code)
	case <-time.After(200 * time.Millisecond):
	}
	pw.Close()
	select {
	case code := <-done:
		if code != probe.ExitOK {
			t.Errorf("exit %d", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still holding after its input ended")
	}
	if code := probe.Main(context.Background(), []string{"hold"}, pr, io.Discard, io.Discard); code != probe.ExitBadPlan {
		t.Errorf("hold without a value: exit %d", code)
	}
}

// syncBuffer is a bytes.Buffer safe to read while another goroutine writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
