package supervisor_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/targets/supervisor"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// The test binary doubles as the supervisor: started with GH_SUPERVISOR=1
// it serves on descriptor 3, as it would inside a sandbox.
func TestMain(m *testing.M) {
	switch os.Getenv("GH_SUPERVISOR") {
	case "1":
		os.Exit(supervisor.Main([]string{"3"}, os.Stderr))
	case "control":
		os.Exit(supervisor.Main([]string{"0"}, os.Stderr))
	case "control-filtered":
		if err := denySocketQueries(); err != nil {
			fmt.Fprintln(os.Stderr, "seccomp:", err)
			os.Exit(3)
		}
		os.Exit(supervisor.Main([]string{"0"}, os.Stderr))
	}
	os.Exit(m.Run())
}

// start runs a supervisor as a child process and returns its client.
func start(t *testing.T) (*supervisor.Client, *exec.Cmd) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "ctl.sock")
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: sock, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	f, err := ln.File()
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "GH_SUPERVISOR=1", "GH_FROM_INIT=init-value")
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	gone := make(chan struct{})
	go func() { _ = cmd.Wait(); close(gone) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-gone })
	c := &supervisor.Client{Path: sock, Gone: gone, WaitDelay: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	return c, cmd
}

func sh(t *testing.T, c *supervisor.Client, script string, mod func(*targets.Command)) (targets.Result, string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := targets.Command{Args: []string{"/bin/sh", "-c", script}, Stdout: &out, Stderr: &errb}
	if mod != nil {
		mod(&cmd)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.Exec(ctx, cmd)
	return res, out.String(), errb.String(), err
}

func TestExecRunsCommands(t *testing.T) {
	c, _ := start(t)
	tests := []struct {
		name, script   string
		mod            func(*targets.Command)
		code           int
		stdout, stderr string
	}{
		{name: "exit zero", script: "exit 0"},
		{name: "exit code is data", script: "exit 42", code: 42},
		{name: "output arrives", script: "echo out; echo err >&2", stdout: "out\n", stderr: "err\n"},
		{name: "env overlays the supervisor's", script: `printf '%s|%s' "$GH_FROM_INIT" "$GH_CMD"`, stdout: "init-value|cmd",
			mod: func(c *targets.Command) { c.Env = map[string]string{"GH_CMD": "cmd"} }},
		{name: "stdin arrives", script: `read -r l; printf 'got:%s' "$l"`, stdout: "got:hi",
			mod: func(c *targets.Command) { c.Stdin = strings.NewReader("hi\n") }},
		{name: "killed by a signal is 128+n", script: "kill -9 $$", code: 137},
		{name: "unknown command is 127", code: 127,
			mod: func(c *targets.Command) { c.Args = []string{"gh-no-such-command"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, out, errOut, err := sh(t, c, tt.script, tt.mod)
			if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			if res.ExitCode != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", res.ExitCode, tt.code, errOut)
			}
			if out != tt.stdout || (tt.stderr != "" && errOut != tt.stderr) {
				t.Errorf("stdout %q stderr %q, want %q %q", out, errOut, tt.stdout, tt.stderr)
			}
		})
	}
}

// Cancelling an Exec kills the command's process group, inside.
func TestCancelKillsTheCommand(t *testing.T) {
	c, _ := start(t)
	beat := filepath.Join(t.TempDir(), "beat")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, targets.Command{Args: []string{"/bin/sh", "-c", `while :; do echo b >> "$0"; sleep 0.1; done`, beat}})
		done <- err
	}()
	waitFor(t, func() bool { b, _ := os.ReadFile(beat); return len(b) > 0 })
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want context.Canceled", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Exec did not return after cancel")
	}
	b1, _ := os.ReadFile(beat)
	time.Sleep(500 * time.Millisecond)
	if b2, _ := os.ReadFile(beat); len(b2) != len(b1) {
		t.Fatal("the cancelled command is still writing")
	}
}

// Signal reaches running commands; a command that escaped its group with
// setsid is not a command of ours and is not signalled.
func TestSignalReachesRunningCommands(t *testing.T) {
	c, _ := start(t)
	done := make(chan targets.Result, 1)
	go func() {
		res, _, _, _ := sh(t, c, "sleep 30", nil)
		done <- res
	}()
	var n int
	waitFor(t, func() bool {
		var err error
		n, err = c.Signal(context.Background(), syscall.SIGTERM)
		return err == nil && n == 1
	})
	select {
	case res := <-done:
		if res.ExitCode != 128+int(syscall.SIGTERM) {
			t.Fatalf("exit %d, want %d", res.ExitCode, 128+int(syscall.SIGTERM))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("SIGTERM did not end the command")
	}
}

// The instance ending makes a waiting Exec return ErrGone.
func TestInstanceGoneEndsExec(t *testing.T) {
	c, cmd := start(t)
	done := make(chan error, 1)
	go func() { _, _, _, err := sh(t, c, "sleep 30", nil); done <- err }()
	time.Sleep(300 * time.Millisecond)
	_ = cmd.Process.Kill()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Exec returned no error after the instance died")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Exec did not return after the instance died")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
	}
}

// A command's Dir is where it starts.
func TestExecDir(t *testing.T) {
	c, _ := start(t)
	dir := t.TempDir()
	_, out, _, err := sh(t, c, "pwd", func(cmd *targets.Command) { cmd.Dir = dir })
	if err != nil || strings.TrimSpace(out) != dir {
		t.Fatalf("pwd = %q (err %v), want %s", out, err, dir)
	}
}
