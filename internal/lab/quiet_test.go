package lab_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/lab"
)

// The lab is quiet once what a session sent is recorded, and not while a
// connection of it is still being read.
func TestQuietFollowsRecording(t *testing.T) {
	needLab(t)
	l := upLab(t)
	nw := attach(t, l, "quiet")
	ctx := context.Background()
	resp, err := client(nw).Get("http://" + lab.CallbackV4 + "/c/quiet")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	waitQuiet(t, l, "quiet", true)
	// A connection that sends nothing is sniffed for its first bytes: the
	// lab is busy with it until it is recorded.
	c, err := dial(ctx, nw, "tcp", lab.CallbackV4+":80")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitQuiet(t, l, "quiet", false)
	if quiet, _, err := l.Quiet(ctx, "someone-else"); err != nil || !quiet {
		t.Errorf("another session's view: quiet %v, %v", quiet, err)
	}
	c.Close()
	waitQuiet(t, l, "quiet", true)
}

func waitQuiet(t *testing.T, l *lab.Lab, session string, want bool) {
	t.Helper()
	var why string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		quiet, w, err := l.Quiet(context.Background(), session)
		if err != nil {
			t.Fatal(err)
		}
		if quiet == want {
			return
		}
		why = w
	}
	t.Fatalf("lab never quiet=%v for %s (last: %s)", want, session, why)
}
