package bwrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/gatehouse-dev/gatehouse/internal/hostsession"
	"github.com/gatehouse-dev/gatehouse/internal/targets/egress"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// session is one bubblewrap instance. The host side it shares with every
// process target (cgroup, start, stop and reap, processes, session keys,
// reads from outside) is the embedded kit.
type session struct {
	*hostsession.Session

	prof     *profile.Profile
	spec     targets.Spec
	runtime  string
	st       *stage
	prefix   []string
	fdFiles  []string
	doors    []door
	user     hostUser        // who bubblewrap runs as on the host
	egress   *egress.Applied // the profile's ruleset, when it has one
	ownNetns string          // an empty namespace Start made for a session given none
}

var (
	_ targets.Session       = (*session)(nil)
	_ targets.ProcessLister = (*session)(nil)
	_ targets.SessionKeyer  = (*session)(nil)
)

// newSession is a session of profile p on spec, not started.
func newSession(p *profile.Profile, spec targets.Spec, version string, user hostUser, initBin string) *session {
	s := &session{prof: p, spec: spec, runtime: version, user: user}
	s.Session = &hostsession.Session{Name: "bwrap", Runtime: "bubblewrap", Profile: p, InitBin: initBin, Release: s.release}
	return s
}

// release removes what Start made besides the instance, once nothing of
// it runs: the egress tables, the staging folder, an isolated namespace.
func (s *session) release(ctx context.Context) error {
	var errs []error
	if err := s.egress.Flush(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := s.st.remove(); err != nil {
		errs = append(errs, err)
	}
	if err := deleteNetns(ctx, s.ownNetns); err != nil {
		errs = append(errs, err)
	} else {
		s.ownNetns = ""
	}
	return errors.Join(errs...)
}

// Exec runs one command as a child of the session's init. A non-zero exit
// is data; ctx cancellation kills the command's process group.
func (s *session) Exec(ctx context.Context, c targets.Command) (targets.Result, error) {
	if len(c.Args) == 0 {
		return targets.Result{}, errors.New("bwrap: exec: empty command")
	}
	if c.User != "" {
		return targets.Result{}, fmt.Errorf("bwrap: exec as %s: --unshare-user maps one uid into the sandbox: %w", c.User, targets.ErrUnsupported)
	}
	res, err := s.Run(ctx, c)
	if err != nil {
		return res, fmt.Errorf("bwrap: exec %s: %w", c.Args[0], err)
	}
	return res, nil
}

// CopyIn writes a file into the staging folder; only paths under
// /gatehouse exist there.
func (s *session) CopyIn(ctx context.Context, path string, r io.Reader, mode fs.FileMode) error {
	if s.Stopped() {
		return fmt.Errorf("bwrap: copy in %s: %w", path, hostsession.ErrStopped)
	}
	rel, ok := underInside(path)
	if !ok {
		return fmt.Errorf("bwrap: copy in %s: only paths under %s: %w", path, Inside, targets.ErrUnsupported)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bwrap: copy in %s: %w", path, err)
	}
	if err := s.st.write(rel, untrusted.WithContext(ctx, r), mode); err != nil {
		return fmt.Errorf("bwrap: copy in: %w", err)
	}
	return nil
}
