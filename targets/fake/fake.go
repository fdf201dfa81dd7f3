// Package fake is a Target whose behaviour is given by func fields, for unit
// tests of steps, evidence and the conformance suite without a sandbox.
// A nil func makes the call fail with targets.ErrUnsupported (Stop: nil).
package fake

import (
	"context"
	"fmt"
	"io"
	"io/fs"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// Target is a fake targets.Target.
type Target struct {
	NameFunc  func() string
	StartFunc func(ctx context.Context, spec targets.Spec) (targets.Session, error)
}

var _ targets.Target = (*Target)(nil)

// Name returns NameFunc() or "fake".
func (t *Target) Name() string {
	if t.NameFunc == nil {
		return "fake"
	}
	return t.NameFunc()
}

// Start calls StartFunc.
func (t *Target) Start(ctx context.Context, spec targets.Spec) (targets.Session, error) {
	if t.StartFunc == nil {
		return nil, fmt.Errorf("fake: start: %w", targets.ErrUnsupported)
	}
	return t.StartFunc(ctx, spec)
}

// Session is a fake targets.Session.
type Session struct {
	ExecFunc    func(ctx context.Context, cmd targets.Command) (targets.Result, error)
	CopyInFunc  func(ctx context.Context, path string, r io.Reader, mode fs.FileMode) error
	InspectFunc func(ctx context.Context) (targets.Config, error)
	StopFunc    func(ctx context.Context) error
}

var _ targets.Session = (*Session)(nil)

// Exec calls ExecFunc.
func (s *Session) Exec(ctx context.Context, cmd targets.Command) (targets.Result, error) {
	if s.ExecFunc == nil {
		return targets.Result{}, fmt.Errorf("fake: exec: %w", targets.ErrUnsupported)
	}
	return s.ExecFunc(ctx, cmd)
}

// CopyIn calls CopyInFunc.
func (s *Session) CopyIn(ctx context.Context, path string, r io.Reader, mode fs.FileMode) error {
	if s.CopyInFunc == nil {
		return fmt.Errorf("fake: copy in: %w", targets.ErrUnsupported)
	}
	return s.CopyInFunc(ctx, path, r, mode)
}

// Inspect calls InspectFunc.
func (s *Session) Inspect(ctx context.Context) (targets.Config, error) {
	if s.InspectFunc == nil {
		return targets.Config{}, fmt.Errorf("fake: inspect: %w", targets.ErrUnsupported)
	}
	return s.InspectFunc(ctx)
}

// Stop calls StopFunc, or does nothing.
func (s *Session) Stop(ctx context.Context) error {
	if s.StopFunc == nil {
		return nil
	}
	return s.StopFunc(ctx)
}
