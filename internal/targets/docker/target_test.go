package docker_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/targets/docker"
	"github.com/gatehouse-dev/gatehouse/targets"
)

func TestStartDaemonRefusesHostNamespace(t *testing.T) {
	_, err := docker.StartDaemon(context.Background(), "", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("StartDaemon with no netns: err = %v, want a refusal", err)
	}
}

// start starts a session and stops it at cleanup.
func start(t *testing.T, spec docker.Spec, ts targets.Spec) (*docker.Target, targets.Session) {
	t.Helper()
	tg, err := docker.New(labDaemon.Host(), spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if ts.Path == "" {
		ts.Path = targets.PathNormal
	}
	s, err := tg.Start(ctx, ts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return tg, s
}

// run execs args and returns exit code, stdout, stderr.
func run(t *testing.T, s targets.Session, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := targets.Command{Args: args, Stdout: &out, Stderr: &errb}
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.Exec(ctx, cmd)
	if err != nil {
		t.Fatalf("exec %v: %v", args, err)
	}
	return res.ExitCode, out.String(), errb.String()
}

// TestConformance is the contract every target keeps, until
// targets/targettest exists: exit codes and output are data, stdin
// arrives, ctx cancel returns promptly, CopyIn lands, Inspect reads the
// runtime back, Stop is safe twice and leaves nothing.
func TestConformance(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			needLab(t)
			if rt == "runsc" {
				needRunsc(t)
			}
			tg, s := start(t, docker.Spec{Runtime: rt, Network: docker.NetworkNone}, targets.Spec{Name: t.Name(), Env: map[string]string{"GH_SESSION": "s1"}})
			if code, out, _ := run(t, s, "", "sh", "-c", "echo out; echo err >&2; exit 3"); code != 3 || out != "out\n" {
				t.Errorf("exit 3 script: code %d out %q", code, out)
			}
			if _, _, errs := run(t, s, "", "sh", "-c", "echo err >&2"); errs != "err\n" {
				t.Errorf("stderr = %q", errs)
			}
			if _, out, _ := run(t, s, "plan-on-stdin", "cat"); out != "plan-on-stdin" {
				t.Errorf("stdin echoed = %q", out)
			}
			if _, out, _ := run(t, s, "", "sh", "-c", "echo $GH_SESSION"); out != "s1\n" {
				t.Errorf("session env = %q", out)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			begin := time.Now()
			_, err := s.Exec(ctx, targets.Command{Args: []string{"sleep", "60"}})
			cancel()
			// Well before the command's own end (60 s): cancellation, not the
			// command, ended the Exec. Generous, as these machines are slow.
			if !errors.Is(err, context.DeadlineExceeded) || time.Since(begin) > 30*time.Second {
				t.Errorf("cancelled exec: err %v after %v", err, time.Since(begin))
			}
			if err := s.CopyIn(context.Background(), "/gatehouse/bin/note", strings.NewReader("copied"), 0o755); err != nil {
				t.Fatal(err)
			}
			if code, out, _ := run(t, s, "", "sh", "-c", "cat /gatehouse/bin/note; test -x /gatehouse/bin/note"); code != 0 || out != "copied" {
				t.Errorf("copied file: code %d content %q", code, out)
			}
			cfg, err := s.Inspect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Runtime != rt || cfg.Target != tg.Name() || cfg.Facts["network_mode"] != "none" {
				t.Errorf("inspect: runtime %q target %q network %q", cfg.Runtime, cfg.Target, cfg.Facts["network_mode"])
			}
			// runc shares the machine's kernel; gVisor answers with its own.
			kernel, host := cfg.Facts["inside.kernel"], hostRelease(t)
			if (rt == "runc") != strings.Contains(kernel, host) || (rt == "runsc" && !strings.Contains(kernel, "gvisor")) {
				t.Errorf("inside.kernel = %q (machine's release %q)", kernel, host)
			}
			id := s.(*docker.Session).ID()
			for i := 0; i < 2; i++ {
				if err := s.Stop(context.Background()); err != nil {
					t.Fatalf("stop #%d: %v", i+1, err)
				}
			}
			if n := containersNamed(t, id); n != 0 {
				t.Errorf("container %s still listed after Stop", id)
			}
		})
	}
}
