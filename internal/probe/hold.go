package probe

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// MaxHold caps how long `probe hold` stays when nobody ends it.
const MaxHold = 5 * time.Minute

// Hold is `probe hold VALUE [DIR]`: a process that stays alive in its
// session while another session looks for it, doing nothing else. It
// carries VALUE in its argv (the harness also puts it in its
// environment), so a pid namespace shared with another session shows the
// value in /proc/PID/cmdline and environ; with DIR (the session's
// storage) as its working folder, /proc/PID/cwd and root lead there. It
// prints HoldReady once it runs, and ends when its standard input ends
// (the harness closes it when both sessions are done), when ctx ends, or
// after MaxHold.
func Hold(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) < 1 || len(args) > 2 || args[0] == "" {
		fmt.Fprintln(stderr, "usage: probe hold VALUE [DIR]")
		return ExitBadPlan
	}
	if len(args) == 2 {
		_ = os.Chdir(args[1]) // a sandbox without the folder still holds
	}
	if _, err := fmt.Fprintln(stdout, wire.HoldReady, os.Getpid()); err != nil {
		return ExitFailed
	}
	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(stdin, 1<<20))
		close(eof)
	}()
	select {
	case <-eof:
	case <-ctx.Done():
	case <-time.After(MaxHold):
	}
	return ExitOK
}
