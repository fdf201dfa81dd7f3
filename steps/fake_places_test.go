package steps_test

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/lab"
	"github.com/gatehouse-dev/gatehouse/probe/wire"
	"github.com/gatehouse-dev/gatehouse/steps/steptest"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// placeTarget is a fake sandbox that sees what its profile would bind:
// answer decides each step's report from the session's spec (places,
// secrets), the way a real probe would find them through the binds.
type placeTarget struct {
	lab    *steptest.Lab
	answer func(s *placeSession, st wire.Step) wire.Report
	// noHold makes `probe hold` end at once without saying it runs: a
	// session with no live process while the other looks.
	noHold bool
	// noWindows makes reports carry no active window (an older or lying
	// probe): the overlap rule cannot be judged.
	noWindows bool
	// timed makes sends and receives last their DurationMS, with the
	// window they were at work, as the probe's do.
	timed bool
	// before, when set, runs before a plan's steps (a slow start).
	before func(wire.Plan)
}

func (t *placeTarget) Name() string { return "fake-places" }
func (t *placeTarget) Start(ctx context.Context, spec targets.Spec) (targets.Session, error) {
	return &placeSession{t: t, spec: spec}, nil
}

type placeSession struct {
	t       *placeTarget
	spec    targets.Spec
	sleeper atomic.Int64 // pid of the process holding a secret, once started
	// starting is closed once sleeper is set. It exists from before the
	// process starts: the harness may see the process on the host (and
	// move on to the hunt) before Exec has stored its pid.
	mu       sync.Mutex
	starting chan struct{}
	ran      time.Time // when a timed plan's steps began
}

// Exec runs the probe's plan against the fake; a `sleep` (the process
// holding a secret) really runs on the host with its environment, because
// the harness checks from outside that it started.
func (s *placeSession) Exec(ctx context.Context, c targets.Command) (targets.Result, error) {
	if len(c.Args) > 0 && c.Args[0] == "sleep" {
		cmd := exec.CommandContext(ctx, "sleep", c.Args[1:]...)
		for k, v := range c.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		starting := make(chan struct{})
		s.mu.Lock()
		s.starting = starting
		s.mu.Unlock()
		err := cmd.Start()
		if err == nil {
			s.sleeper.Store(int64(cmd.Process.Pid))
		}
		close(starting)
		if err != nil {
			return targets.Result{}, err
		}
		_ = cmd.Wait()
		return targets.Result{}, nil
	}
	if len(c.Args) > 1 && c.Args[1] == "hold" {
		return s.hold(ctx, c)
	}
	var p wire.Plan
	if err := json.NewDecoder(c.Stdin).Decode(&p); err != nil {
		return targets.Result{ExitCode: 2}, nil
	}
	if s.t.before != nil {
		s.t.before(p)
	}
	if s.t.timed {
		s.sleepAsLongAsAsked(p)
	}
	enc := json.NewEncoder(c.Stdout)
	for _, st := range p.Steps {
		if st.ID == "positive-control" {
			s.t.lab.Add(evidence.Hit{Endpoint: "inference", Session: s.spec.Name, Proto: "http", Summary: st.Target, Data: st.Headers["X-Gatehouse-Control"]})
			_ = enc.Encode(wire.Report{ID: st.ID, Kind: st.Kind, Target: st.Target, Outcome: wire.OutcomeCompleted, Status: 200, Start: time.Now()})
			continue
		}
		start := time.Now()
		rep := s.t.answer(s, st)
		rep.ID, rep.Kind, rep.Target, rep.Start = st.ID, st.Kind, st.Target, start
		if !s.t.noWindows {
			rep.ActiveFrom, rep.ActiveTo = start, time.Now()
		}
		if s.t.timed && st.DurationMS > 0 {
			rep.ActiveFrom, rep.ActiveTo = s.ran, s.ran.Add(time.Duration(st.DurationMS)*time.Millisecond)
		}
		_ = enc.Encode(rep)
	}
	return targets.Result{}, nil
}

// sleepAsLongAsAsked plays a plan whose steps all run at once for their
// DurationMS, and notes when they began.
func (s *placeSession) sleepAsLongAsAsked(p wire.Plan) {
	longest := 0
	for _, st := range p.Steps {
		longest = max(longest, st.DurationMS)
	}
	s.ran = time.Now()
	time.Sleep(time.Duration(longest) * time.Millisecond)
}

// hold plays `probe hold`: it says it runs and stays until its input ends.
func (s *placeSession) hold(ctx context.Context, c targets.Command) (targets.Result, error) {
	if s.t.noHold {
		return targets.Result{ExitCode: 1}, nil
	}
	if _, err := io.WriteString(c.Stdout, wire.HoldReady+" 1\n"); err != nil {
		return targets.Result{}, err
	}
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, c.Stdin); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return targets.Result{}, ctx.Err()
	}
	return targets.Result{}, nil
}

func (s *placeSession) CopyIn(context.Context, string, io.Reader, fs.FileMode) error { return nil }
func (s *placeSession) Inspect(context.Context) (targets.Config, error) {
	return targets.Config{Target: "fake-places", Runtime: "fake"}, nil
}
func (s *placeSession) Stop(context.Context) error { return nil }

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

// processValue reads the session's secret-holding process's environment
// on the host, as a hunt of /proc/*/environ with a shared PID namespace
// would.
func processValue(s *placeSession) string {
	s.mu.Lock()
	starting := s.starting
	s.mu.Unlock()
	if starting != nil {
		<-starting
	}
	if pid := s.sleeper.Load(); pid > 0 {
		b, _ := os.ReadFile("/proc/" + strconv.FormatInt(pid, 10) + "/environ")
		for _, kv := range strings.Split(string(b), "\x00") {
			if v, ok := strings.CutPrefix(kv, "DB_PASSWORD="); ok && strings.HasPrefix(v, lab.CanaryPrefix) {
				return v
			}
		}
	}
	return ""
}
