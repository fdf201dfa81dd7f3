package targettest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/targets"
)

var cases = []testCase{
	{"exit_zero_is_data", func(t *testing.T, nt NewTarget) {
		_, s := start(t, nt)
		o := sh(context.Background(), s, shExit, []string{"0"}, nil)
		if o.err != nil || o.res.ExitCode != 0 {
			t.Fatalf("exit 0: got code %d, err %v", o.res.ExitCode, o.err)
		}
		if o.res.Duration <= 0 {
			t.Fatalf("Result.Duration = %v, want > 0", o.res.Duration)
		}
	}},
	{"exit_nonzero_is_data", func(t *testing.T, nt NewTarget) {
		_, s := start(t, nt)
		for _, code := range []int{1, 3, 42} {
			o := sh(context.Background(), s, shExit, []string{strconv.Itoa(code)}, nil)
			if o.err != nil {
				t.Fatalf("exit %d returned an error (a non-zero exit is data): %v", code, o.err)
			}
			if o.res.ExitCode != code {
				t.Fatalf("exit %d: Result.ExitCode = %d", code, o.res.ExitCode)
			}
		}
	}},
	{"stdout_and_stderr", func(t *testing.T, nt NewTarget) {
		_, s := start(t, nt)
		o := sh(context.Background(), s, shOutput, nil, nil)
		if o.err != nil || o.stdout != "out\n" || o.stderr != "err\n" {
			t.Fatalf("got stdout %q stderr %q err %v; want \"out\\n\", \"err\\n\"", o.stdout, o.stderr, o.err)
		}
	}},
	{"env_reaches_command", func(t *testing.T, nt NewTarget) {
		_, s := start(t, nt)
		o := sh(context.Background(), s, shEnv, nil, func(c *targets.Command) {
			c.Env = map[string]string{"GH_SUITE_CMD": "cmd-value"}
		})
		if o.err != nil || o.stdout != "spec-value|cmd-value" {
			t.Fatalf("got %q (err %v); want Spec.Env and Command.Env both set: \"spec-value|cmd-value\"", o.stdout, o.err)
		}
	}},
	{"stdin_reaches_command", func(t *testing.T, nt NewTarget) {
		_, s := start(t, nt)
		o := sh(context.Background(), s, shStdin, nil, func(c *targets.Command) {
			c.Stdin = strings.NewReader("hello stdin\n")
		})
		if o.err != nil || o.stdout != "got:hello stdin" {
			t.Fatalf("got %q (err %v); want \"got:hello stdin\"", o.stdout, o.err)
		}
	}},
	{"spec_files_are_placed", func(t *testing.T, nt NewTarget) {
		_, s := start(t, nt)
		if got := must(t, s, shRead, SpecFile); got != specText {
			t.Fatalf("%s reads %q, want %q", SpecFile, got, specText)
		}
	}},
	{"copy_in_then_read_back", func(t *testing.T, nt NewTarget) {
		_, s := start(t, nt)
		want := randomName("copied-")
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		if err := s.CopyIn(ctx, CopyFile, strings.NewReader(want+"\n"), 0o644); err != nil {
			t.Fatalf("CopyIn: %v", err)
		}
		if got := must(t, s, shRead, CopyFile); got != want {
			t.Fatalf("read back %q, want %q", got, want)
		}
	}},
	{"cancel_kills_command", testCancel},
	{"one_session_is_one_sandbox", func(t *testing.T, nt NewTarget) {
		// A process the first command leaves is seen by the second: they
		// run in one sandbox instance, as an agent and its tools do.
		_, s := start(t, nt)
		mark, pidFile := randomName("gh-suite-"), WorkDir+"/"+randomName("pid-")
		if o := sh(context.Background(), s, shLeave, []string{mark, pidFile}, nil); o.err != nil || o.res.ExitCode != 0 {
			t.Fatalf("leaving a background process: exit %d, err %v, stderr %q", o.res.ExitCode, o.err, o.stderr)
		}
		if o := sh(context.Background(), s, shSeek, []string{mark, pidFile}, nil); o.stdout != "alive" {
			t.Fatalf("the second command does not see the first one's process (got %q, err %v, stderr %q): each command runs in a sandbox of its own", o.stdout, o.err, o.stderr)
		}
	}},
	{"inspect_reports_runtime_and_argv", func(t *testing.T, nt NewTarget) {
		tg, s := start(t, nt)
		cfg, err := s.Inspect(context.Background())
		if err != nil {
			t.Fatalf("Inspect: %v", err)
		}
		if cfg.Runtime == "" || len(cfg.Argv) == 0 || cfg.Target != tg.Name() {
			t.Fatalf("Inspect = Target %q Runtime %q Argv %q; want Target %q and both others set", cfg.Target, cfg.Runtime, cfg.Argv, tg.Name())
		}
	}},
	{"stop_twice_is_fine", func(t *testing.T, nt NewTarget) {
		_, s := start(t, nt)
		for i := 1; i <= 2; i++ {
			if err := s.Stop(context.Background()); err != nil {
				t.Fatalf("Stop #%d: %v", i, err)
			}
		}
	}},
	{"exec_after_stop_errors", func(t *testing.T, nt NewTarget) {
		_, s := start(t, nt)
		if err := s.Stop(context.Background()); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if o := sh(context.Background(), s, shExit, []string{"0"}, nil); o.err == nil {
			t.Fatal("Exec after Stop succeeded; a stopped session must refuse")
		}
	}},
}

// testCancel starts a command that appends to a file in WorkDir every 0.2 s,
// waits until it is seen writing, cancels it, and then checks from a second
// command that the file has stopped growing: the command is really gone,
// not just detached from Exec.
func testCancel(t *testing.T, nt NewTarget) {
	_, s := start(t, nt)
	beat := WorkDir + "/" + randomName("beat-")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan output, 1)
	go func() { done <- sh(ctx, s, shBeat, []string{beat}, nil) }()

	deadline := time.Now().Add(callTimeout)
	for count(t, s, beat) < 2 {
		select {
		case o := <-done:
			t.Fatalf("the long command ended by itself: exit %d, err %v, stderr %q", o.res.ExitCode, o.err, o.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the long command never wrote to %s", beat)
		}
		time.Sleep(200 * time.Millisecond)
	}
	cancel()
	select {
	case o := <-done:
		if !errors.Is(o.err, context.Canceled) {
			t.Fatalf("cancelled Exec returned err %v, want one wrapping context.Canceled", o.err)
		}
	case <-time.After(killBound):
		t.Fatalf("Exec did not return within %v of cancellation", killBound)
	}
	time.Sleep(time.Second)
	before := count(t, s, beat)
	time.Sleep(1500 * time.Millisecond)
	if after := count(t, s, beat); after != before {
		t.Fatalf("the cancelled command is still running: %s grew from %d to %d lines", beat, before, after)
	}
}

func count(t *testing.T, s targets.Session, file string) int {
	t.Helper()
	n, err := strconv.Atoi(trim(must(t, s, shCount, file)))
	if err != nil {
		t.Fatalf("count lines of %s: %v", file, err)
	}
	return n
}
