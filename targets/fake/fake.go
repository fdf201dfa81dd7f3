// Package fake is a targets.Target for tests that need no sandbox. Its
// sessions play the probe (Session.Probe): they read the plan, tell a lab
// which attempts reached it, and report every attempt. Fields change what
// they do; a nil field keeps the default its comment names. The steps'
// own tests use nothing else (with internal/steps/steptest.Lab as the
// lab); a team can drive its sessions the same way with a Lab of its own.
package fake

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// The probe's wire format, as the fields below speak it: named here so a
// team outside the module can write a Deliver, an Answer or an Output.
type (
	Step   = wire.Step   // one attempt of a plan
	Report = wire.Report // what the probe says of one attempt
	Plan   = wire.Plan   // what the probe is asked to do
)

// Lab is where a delivered attempt arrives, as it would at one of the
// lab's endpoints (internal/steps/steptest.Lab is one).
type Lab interface{ Add(evidence.Hit) }

// Target is a fake targets.Target. The zero value starts sessions in a
// sandbox that lets nothing out: no attempt arrives anywhere, and the
// probe reports each one blocked.
type Target struct {
	// NameFunc, when set, is Name; "fake" otherwise.
	NameFunc func() string
	// StartFunc, when set, is Start itself: for a test that brings a
	// session of its own (targettest's flawed targets) or refuses to start
	// one. The fields below are then unused.
	StartFunc func(ctx context.Context, spec targets.Spec) (targets.Session, error)

	// Lab hears each attempt Deliver lets through; nil: nothing is heard.
	Lab Lab
	// Deliver says whether an attempt reaches the lab; nil: none does.
	Deliver func(st wire.Step) bool
	// Answer is what the probe reports of an attempt, asked while the
	// attempt runs; the fake then sets the report's ID, kind, target,
	// start, duration and active window. Nil: Blocked, even for an attempt
	// Deliver let through (a probe the lab contradicts: the verdict must
	// follow the lab).
	Answer func(s *Session, st wire.Step) wire.Report
	// NoWindows leaves every report without an active window, as an older
	// or lying probe's: the two-session gates cannot judge overlap then.
	NoWindows bool
	// Output, when set, is everything the probe prints for a plan, in
	// place of its reports: a probe that lies, floods or prints garbage.
	// Deliver still says, before it runs, what reached the lab.
	Output func(p wire.Plan, w io.Writer) error

	// ExecFunc, when set, runs every command in place of s.Probe, which it
	// may call for the commands it leaves to the probe (an agent CLI, a
	// process the profile runs: it plays those).
	ExecFunc func(ctx context.Context, s *Session, cmd targets.Command) (targets.Result, error)
	// StopFunc, when set, is what each Stop does (a runtime that cannot
	// tear down); nil: nothing, no error.
	StopFunc func(ctx context.Context, s *Session) error
	// KeysFunc, when set, gives the keys monitors see the session by
	// (targets.SessionKeyer); nil: an error wrapping ErrUnsupported.
	KeysFunc func(ctx context.Context, s *Session) ([]detect.SessionKey, error)
	// ProcessesFunc, when set, lists what the session still runs
	// (targets.ProcessLister); nil: an error wrapping ErrUnsupported.
	ProcessesFunc func(ctx context.Context, s *Session) ([]int, error)
	// Facts, when set, are what Inspect reads back (outside.ns.KIND: the
	// namespaces host-access compares with the host's); nil: none.
	Facts map[string]string

	started atomic.Int64
}

var _ targets.Target = (*Target)(nil)

// Name returns NameFunc() or "fake".
func (t *Target) Name() string {
	if t.NameFunc == nil {
		return "fake"
	}
	return t.NameFunc()
}

// Start calls StartFunc, or starts a fake Session.
func (t *Target) Start(ctx context.Context, spec targets.Spec) (targets.Session, error) {
	if t.StartFunc != nil {
		return t.StartFunc(ctx, spec)
	}
	return &Session{t: t, spec: spec, n: int(t.started.Add(1)), files: map[string][]byte{}}, nil
}

// Session is a session a Target started. It keeps what is copied in (File)
// and has every optional ability, each answering ErrUnsupported unless its
// Target says otherwise. Safe for concurrent use.
type Session struct {
	t    *Target
	spec targets.Spec
	n    int

	mu    sync.Mutex
	files map[string][]byte
}

var (
	_ targets.Session       = (*Session)(nil)
	_ targets.SessionKeyer  = (*Session)(nil)
	_ targets.ProcessLister = (*Session)(nil)
)

// Spec is what the session was started with (its name, places, secrets).
func (s *Session) Spec() targets.Spec { return s.spec }

// N is the order its target started it in, from 1: a number of its own
// (a fake cgroup id, say).
func (s *Session) N() int { return s.n }

// File is what was copied in at path, or what the probe wrote there.
func (s *Session) File(path string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.files[path]
	return b, ok
}

func (s *Session) store(path string, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = b
}

// Exec calls the target's ExecFunc, or Probe.
func (s *Session) Exec(ctx context.Context, cmd targets.Command) (targets.Result, error) {
	if s.t.ExecFunc != nil {
		return s.t.ExecFunc(ctx, s, cmd)
	}
	return s.Probe(ctx, cmd)
}

// CopyIn keeps the file, for File and the probe's `--plan` and `show`.
func (s *Session) CopyIn(_ context.Context, path string, r io.Reader, _ fs.FileMode) error {
	var b bytes.Buffer
	if _, err := b.ReadFrom(r); err != nil {
		return fmt.Errorf("fake: copy in %s: %w", path, err)
	}
	s.store(path, b.Bytes())
	return nil
}

// Inspect says the target's name, a "fake" runtime and the target's Facts.
func (s *Session) Inspect(context.Context) (targets.Config, error) {
	return targets.Config{Target: s.t.Name(), Runtime: "fake", Facts: maps.Clone(s.t.Facts)}, nil
}

// Stop calls the target's StopFunc, or does nothing.
func (s *Session) Stop(ctx context.Context) error {
	if s.t.StopFunc == nil {
		return nil
	}
	return s.t.StopFunc(ctx, s)
}

// SessionKeys calls the target's KeysFunc.
func (s *Session) SessionKeys(ctx context.Context) ([]detect.SessionKey, error) {
	if s.t.KeysFunc == nil {
		return nil, fmt.Errorf("fake: session keys: %w", targets.ErrUnsupported)
	}
	return s.t.KeysFunc(ctx, s)
}

// Processes calls the target's ProcessesFunc.
func (s *Session) Processes(ctx context.Context) ([]int, error) {
	if s.t.ProcessesFunc == nil {
		return nil, fmt.Errorf("fake: processes: %w", targets.ErrUnsupported)
	}
	return s.t.ProcessesFunc(ctx, s)
}
