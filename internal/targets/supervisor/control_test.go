package supervisor_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/targets/supervisor"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// startControl runs a supervisor in control mode ("init 0"): its stdin is
// the control socket, as a wrapper passes it through. env is the init's
// own environment on top of the test's.
func startControl(t *testing.T, env ...string) (*supervisor.Client, *exec.Cmd) {
	t.Helper()
	ctl, child, err := supervisor.NewControl()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(noProxy(os.Environ()), "GH_SUPERVISOR=control", "GH_FROM_INIT=init-value"), env...)
	cmd.Stdin = child
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child.Close()
	gone := make(chan struct{})
	go func() { _ = cmd.Wait(); close(gone) }()
	t.Cleanup(func() { ctl.Close(); _ = cmd.Process.Kill(); <-gone })
	c := &supervisor.Client{Dial: ctl.Dial, Gone: gone, WaitDelay: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	return c, cmd
}

func TestControlModeRunsCommands(t *testing.T) {
	c, _ := startControl(t)
	res, out, errOut, err := sh(t, c, `read -r l; printf '%s|%s|%s' "$l" "$GH_FROM_INIT" "$GH_CMD"; echo e >&2; exit 7`, func(cmd *targets.Command) {
		cmd.Stdin = strings.NewReader("in\n")
		cmd.Env = map[string]string{"GH_CMD": "cmd"}
	})
	if err != nil || res.ExitCode != 7 || out != "in|init-value|cmd" || errOut != "e\n" {
		t.Fatalf("exit %d err %v stdout %q stderr %q", res.ExitCode, err, out, errOut)
	}
	// The control socket is not any command's stdin or other descriptor.
	_, out, _, _ = sh(t, c, `ls -l /proc/$$/fd/ | grep -c socket || true`, nil)
	if strings.TrimSpace(out) != "0" {
		t.Fatalf("a command holds %s sockets, want none", strings.TrimSpace(out))
	}
}

// Hanging up the control connection ends the init.
func TestControlCloseEndsInit(t *testing.T) {
	ctl, child, err := supervisor.NewControl()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "GH_SUPERVISOR=control")
	cmd.Stdin = child
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	ctl.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("init exited with %v, want 0", err)
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("init still runs after the control connection closed")
	}
	if _, err := ctl.Dial(context.Background()); err == nil {
		t.Fatal("Dial after Close succeeded")
	}
}

// An init whose stdin is not a socket (a wrapper that made it a pipe)
// says so and exits non-zero.
func TestControlModeRefusesAPipe(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "GH_SUPERVISOR=control")
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not the harness's") {
		t.Fatalf("err %v, output %q; want a refusal", err, out)
	}
}

// The wrapper's own proxy settings win over the request's, taken whole;
// without any, the request's apply.
func TestControlModeProxyRule(t *testing.T) {
	script := `printf '%s|%s|%s|%s' "$HTTPS_PROXY" "$ALL_PROXY" "$no_proxy" "$OTHER"`
	req := map[string]string{"HTTPS_PROXY": "http://dummy:1", "ALL_PROXY": "socks5://dummy:2", "no_proxy": "x", "OTHER": "o"}
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"wrapper proxy wins", []string{"HTTPS_PROXY=http://wrapper:3128"}, "http://wrapper:3128|||o"},
		{"lower case counts too", []string{"http_proxy=http://wrapper:3128"}, "|||o"},
		{"no wrapper proxy: the request's", nil, "http://dummy:1|socks5://dummy:2|x|o"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := startControl(t, tc.env...)
			_, out, _, err := sh(t, c, script, func(cmd *targets.Command) { cmd.Env = req })
			if err != nil || out != tc.want {
				t.Fatalf("got %q (err %v), want %q", out, err, tc.want)
			}
		})
	}
}

// noProxy drops the test's own proxy variables, if it has any.
func noProxy(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasSuffix(strings.ToUpper(k), "_PROXY") {
			out = append(out, kv)
		}
	}
	return out
}

// One writer given as both stdout and stderr gets both streams (os/exec's
// rule); two copies into one bytes.Buffer used to race and could lose all.
func TestSameWriterForStdoutAndStderr(t *testing.T) {
	c, _ := startControl(t)
	for i := 0; i < 20; i++ {
		var out bytes.Buffer
		res, err := c.Exec(context.Background(), targets.Command{Args: []string{"/bin/sh", "-c", "echo out; echo err >&2"}, Stdout: &out, Stderr: &out})
		if err != nil || res.ExitCode != 0 || out.String() != "out\nerr\n" {
			t.Fatalf("run %d: %v %+v: %q", i, err, res, out.String())
		}
	}
}
