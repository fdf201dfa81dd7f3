package steps_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/steps/steptest"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/fake"
)

// placeSandbox is a fake sandbox that sees what its profile would bind:
// answer decides each attempt's report from the session's spec (places,
// secrets), the way a real probe finds them through the binds. Its
// positive control reaches inference, and a `sleep` (the process holding
// a secret) really runs on the host with its environment, because the
// harness checks from outside that it started.
func placeSandbox(fl *steptest.Lab, answer func(s *fake.Session, st wire.Step) wire.Report) *fake.Target {
	return &fake.Target{Lab: fl, Deliver: onlyControl,
		Answer: func(s *fake.Session, st wire.Step) wire.Report {
			if st.ID == "positive-control" {
				return wire.Report{Outcome: wire.OutcomeCompleted, Status: 200}
			}
			return answer(s, st)
		},
		ExecFunc: func(ctx context.Context, s *fake.Session, c targets.Command) (targets.Result, error) {
			if len(c.Args) == 0 || c.Args[0] != "sleep" {
				return s.Probe(ctx, c)
			}
			cmd := exec.CommandContext(ctx, "sleep", c.Args[1:]...)
			cmd.Env = []string{sessionMark(s)}
			for k, v := range c.Env {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			if err := cmd.Start(); err != nil {
				return targets.Result{}, err
			}
			_ = cmd.Wait() // killed when the harness is done with it
			return targets.Result{}, nil
		},
	}
}

// sessionMark tells this test process's secret-holding processes apart
// by session.
func sessionMark(s *fake.Session) string {
	return fmt.Sprintf("FAKE_SESSION=%d/%s", os.Getpid(), s.Spec().Name)
}

// noHold makes the sandbox's `probe hold` end at once without saying it
// runs: a session with no live process while the other looks.
func noHold(tgt *fake.Target) {
	next := tgt.ExecFunc
	tgt.ExecFunc = func(ctx context.Context, s *fake.Session, c targets.Command) (targets.Result, error) {
		if len(c.Args) > 1 && c.Args[1] == "hold" {
			return targets.Result{ExitCode: 1}, nil
		}
		return next(ctx, s, c)
	}
}

func denied() wire.Report {
	return wire.Report{Outcome: wire.OutcomeDenied, Error: "permission denied"}
}

// ownNonce reads the session's own storage, as /workspace/nonce would.
func ownNonce(spec targets.Spec) wire.Report {
	b, err := os.ReadFile(filepath.Join(spec.Places["storage"], "nonce"))
	if err != nil {
		return wire.Report{Outcome: wire.OutcomeError, Error: err.Error()}
	}
	return wire.Report{Outcome: wire.OutcomeCompleted, Excerpt: string(b)}
}

// everyNonce is what a find over a bind of storage-root reports.
func everyNonce(spec targets.Spec) wire.Report {
	files, _ := filepath.Glob(filepath.Join(spec.Places["storage-root"], "*", "nonce"))
	var lines []string
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, v := range wire.Tokens(b) {
			lines = append(lines, v+" /storage/"+filepath.Base(filepath.Dir(f))+"/nonce")
		}
	}
	return wire.Report{Outcome: wire.OutcomeCompleted, Excerpt: strings.Join(lines, "\n")}
}

// processValue reads the environment of the session's secret-holding
// process on the host, as a hunt of /proc/*/environ with a shared PID
// namespace would. The harness saw the process on the host before the
// hunt runs.
func processValue(s *fake.Session) string {
	environs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, f := range environs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		env := strings.Split(string(b), "\x00")
		if !slices.Contains(env, sessionMark(s)) {
			continue
		}
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "DB_PASSWORD="); ok && strings.HasPrefix(v, lab.CanaryPrefix) {
				return v
			}
		}
	}
	return ""
}
