package targettest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/fake"
)

// memTarget is a fake that understands exactly the suite's scripts and
// behaves like a correct target; a non-empty flaw breaks one behaviour so
// the suite's own tests can show it notices.
func memTarget(flaw string) targets.Target {
	return &fake.Target{
		NameFunc: func() string { return "mem" },
		StartFunc: func(ctx context.Context, spec targets.Spec) (targets.Session, error) {
			m := &mem{flaw: flaw, env: spec.Env, files: map[string]string{}}
			for p, f := range spec.Files {
				m.files[p] = string(f.Data)
			}
			return m, nil
		},
	}
}

// mem is one session of memTarget: a whole sandbox of its own, which
// fake.Target's StartFunc is for.
type mem struct {
	flaw    string
	env     map[string]string
	mu      sync.Mutex
	files   map[string]string
	left    string // the mark of the background process shLeave left
	stopped int
}

var _ targets.Session = (*mem)(nil)

func (m *mem) Exec(ctx context.Context, c targets.Command) (targets.Result, error) {
	m.mu.Lock()
	stopped := m.stopped > 0
	m.mu.Unlock()
	if stopped && m.flaw != "exec-after-stop" {
		return targets.Result{}, errors.New("mem: stopped")
	}
	if len(c.Args) < 3 || c.Args[0] != "/bin/sh" {
		return targets.Result{ExitCode: 127}, nil
	}
	script, args := c.Args[2], c.Args[4:]
	arg := func() string {
		if len(args) > 0 {
			return args[0]
		}
		return ""
	}
	start := time.Now()
	res := func(code int) (targets.Result, error) {
		return targets.Result{ExitCode: code, Duration: time.Since(start) + time.Microsecond}, nil
	}
	switch script {
	case shExit:
		code, _ := strconv.Atoi(arg())
		if code != 0 && m.flaw == "exit-as-error" {
			return targets.Result{}, fmt.Errorf("mem: exit status %d", code)
		}
		return res(code)
	case shOutput:
		io.WriteString(c.Stdout, "out\n")
		io.WriteString(c.Stderr, "err\n")
		return res(0)
	case shEnv:
		cmdEnv := c.Env["GH_SUITE_CMD"]
		if m.flaw == "drops-env" {
			cmdEnv = ""
		}
		fmt.Fprintf(c.Stdout, "%s|%s", m.env["GH_SUITE_SPEC"], cmdEnv)
		return res(0)
	case shStdin:
		b, _ := io.ReadAll(c.Stdin)
		fmt.Fprintf(c.Stdout, "got:%s", strings.SplitN(string(b), "\n", 2)[0])
		return res(0)
	case shRead:
		m.mu.Lock()
		body, ok := m.files[arg()]
		m.mu.Unlock()
		if !ok {
			return res(1)
		}
		io.WriteString(c.Stdout, strings.SplitN(body, "\n", 2)[0])
		return res(0)
	case shCount:
		m.mu.Lock()
		n := strings.Count(m.files[arg()], "\n")
		m.mu.Unlock()
		fmt.Fprintf(c.Stdout, "%d\n", n)
		return res(0)
	case shBeat:
		return m.beat(ctx, arg())
	case shLeave:
		// The "sandbox-per-exec" flaw: what one command leaves is gone
		// for the next, as if each ran in a sandbox of its own.
		m.mu.Lock()
		m.left = args[0]
		m.files[args[1]] = "4242\n"
		m.mu.Unlock()
		return res(0)
	case shSeek:
		m.mu.Lock()
		left := m.left
		m.mu.Unlock()
		if left == args[0] && m.flaw != "sandbox-per-exec" {
			io.WriteString(c.Stdout, "alive")
		}
		return res(0)
	}
	return res(127)
}

// beat appends a line every 50 ms until cancelled; the "ignores-cancel"
// flaw returns from Exec but leaves the writer running.
func (m *mem) beat(ctx context.Context, file string) (targets.Result, error) {
	stop := ctx.Done()
	if m.flaw == "ignores-cancel" {
		stop = nil
	}
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			m.mu.Lock()
			m.files[file] += "beat\n"
			m.mu.Unlock()
		}
	}()
	<-ctx.Done()
	return targets.Result{ExitCode: 137, Duration: time.Millisecond}, fmt.Errorf("mem: %w", ctx.Err())
}

func (m *mem) CopyIn(ctx context.Context, path string, r io.Reader, mode fs.FileMode) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if m.flaw == "copy-in-lost" {
		return nil
	}
	m.mu.Lock()
	m.files[path] = string(b)
	m.mu.Unlock()
	return nil
}

func (m *mem) Inspect(ctx context.Context) (targets.Config, error) {
	if m.flaw == "inspect-empty" {
		return targets.Config{Target: "mem"}, nil
	}
	return targets.Config{Target: "mem", Runtime: "mem 1", Argv: []string{"mem"}}, nil
}

func (m *mem) Stop(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopped++
	if m.stopped > 1 && m.flaw == "stop-twice-errors" {
		return errors.New("mem: already stopped")
	}
	return nil
}
