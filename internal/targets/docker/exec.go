package docker

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// Exec runs cmd through the exec API, its output streamed and its stdin
// fed (the probe needs both). The normal path runs as the profile's user,
// the assume-breach path as root.
func (s *Session) Exec(ctx context.Context, cmd targets.Command) (targets.Result, error) {
	if len(cmd.Args) == 0 {
		return targets.Result{}, fmt.Errorf("docker: exec: no command")
	}
	start := time.Now()
	mark := randHex(8)
	opts := client.ExecCreateOptions{
		Cmd:          cmd.Args,
		Env:          append(envList(cmd.Env), execMark+"="+mark),
		AttachStdin:  cmd.Stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
	}
	if s.path == targets.PathBreach {
		opts.User = "0:0"
	}
	if cmd.User != "" {
		opts.User = cmd.User
	}
	if cmd.Dir != "" {
		opts.WorkingDir = cmd.Dir
	}
	created, err := s.cli.ExecCreate(ctx, s.id, opts)
	if err != nil {
		return targets.Result{}, fmt.Errorf("docker: exec: %w", err)
	}
	defer s.track(created.ID)()
	att, err := s.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return targets.Result{}, fmt.Errorf("docker: exec: %w", err)
	}
	defer att.Close()
	if cmd.Stdin != nil {
		go func() {
			_, _ = io.Copy(att.Conn, cmd.Stdin)
			// Half-close so the process sees EOF on stdin.
			if cw, ok := att.Conn.(interface{ CloseWrite() error }); ok {
				_ = cw.CloseWrite()
			}
		}()
	}
	done := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(orDiscard(cmd.Stdout), orDiscard(cmd.Stderr), att.Reader)
		done <- err
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		s.killExec(context.WithoutCancel(ctx), created.ID, mark)
		att.Close()
		return targets.Result{Duration: time.Since(start)}, fmt.Errorf("docker: exec: %w", ctx.Err())
	}
	if err != nil {
		return targets.Result{}, fmt.Errorf("docker: exec: output: %w", err)
	}
	code, err := s.exitCode(ctx, created.ID)
	if err != nil {
		return targets.Result{}, fmt.Errorf("docker: exec: %w", err)
	}
	return targets.Result{ExitCode: code, Duration: time.Since(start)}, nil
}

// exitCode waits for the daemon to mark the exec finished: it closes the
// stream slightly before it records the exit code.
func (s *Session) exitCode(ctx context.Context, id string) (int, error) {
	for i := 0; ; i++ {
		res, err := s.cli.ExecInspect(ctx, id, client.ExecInspectOptions{})
		if err != nil {
			return 0, err
		}
		if !res.Running {
			return res.ExitCode, nil
		}
		if i > 200 {
			return 0, fmt.Errorf("exec %s still running after its output closed", id)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// execMark tags every exec's processes (children inherit it), so that a
// cancelled exec can be found inside a sandbox whose pids we cannot see.
const execMark = "GATEHOUSE_EXEC"

// killExec ends a cancelled exec. Docker has no API for it; the exec's pid
// is a host pid when the daemon is on this machine (the lab), so it is
// killed directly. Under gVisor that pid is `runsc exec`, whose death
// leaves the sandboxed command running, so a root exec inside kills every
// process carrying the exec's mark. On a remote daemon the process lives
// until Stop.
func (s *Session) killExec(ctx context.Context, id, mark string) {
	if s.t.spec.Runtime == "runsc" {
		bb := "/bin/busybox"
		if s.t.spec.Image != "" {
			bb = toolsDir + "/bin/busybox"
		}
		script := `for p in /proc/[0-9]*; do grep -qs "` + execMark + `=$1" $p/environ && kill -9 ${p#/proc/}; done; true`
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if c, err := s.cli.ExecCreate(ctx, s.id, client.ExecCreateOptions{Cmd: []string{bb, "sh", "-c", script, "sh", mark}, User: "0:0"}); err == nil {
			_, _ = s.cli.ExecStart(ctx, c.ID, client.ExecStartOptions{})
			_, _ = s.exitCode(ctx, c.ID)
		}
	}
	if !strings.HasPrefix(s.t.host, "unix://") {
		return
	}
	res, err := s.cli.ExecInspect(ctx, id, client.ExecInspectOptions{})
	if err != nil || !res.Running || res.PID <= 1 {
		return
	}
	_ = syscall.Kill(res.PID, syscall.SIGKILL)
}

func envList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
