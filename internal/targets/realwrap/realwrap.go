// Package realwrap builds the srt and codex-sandbox targets: the exec
// target with the wrapper command its caller takes from Gatehouse's tool
// cache (agents.Cache.WrapperTools, pinned versions), and the host
// preparation each tool needs. See docs/real-sandboxes.md.
package realwrap

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/gatehouse-dev/gatehouse/internal/scratch"
	"github.com/gatehouse-dev/gatehouse/internal/targets/exec"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// SRTTmp is srt's TMPDIR inside its sandboxes: srt binds it writable
// into every sandbox from its own view of the host, so on a machine it is
// one folder shared by every srt sandbox. Gatehouse gives each run a
// folder of its own for it (see Prepare): on the host, /tmp/claude is
// only an empty root-owned mount point.
const SRTTmp = "/tmp/claude"

// srtTmp is SRTTmp; tests move it off the shared /tmp.
var srtTmp = SRTTmp

// Prepare makes what a tool expects on the host: for srt, the folder its
// sandboxes share as their TMPDIR. It is a fresh folder of the run's in the
// harness's root-only scratch folder (on the run's ledger), sticky and
// world-writable like the /tmp/claude it stands for, and bound over
// SRTTmp in each srt session's view of the host: shared by the run's srt
// sessions, as srt shares it between all its sandboxes on a machine (the
// cross-session gates measure that), and never the host's own folder,
// which any local user, or root in a sandbox that sees the host's /tmp,
// could have planted as a link. release removes it (nil for other tools).
func Prepare(p *profile.Profile) (binds []exec.Bind, release func() error, err error) {
	if p.Target != KindSRT {
		return nil, nil, nil
	}
	// The host's /tmp/claude is only the mount point: made empty and
	// root's, or, when there, a real folder of root's, never a link.
	if err := exec.MountPoint(exec.Bind{Inside: srtTmp}); err != nil {
		return nil, nil, fmt.Errorf("srt: %w", err)
	}
	dir, release, err := scratch.New("srt-tmp")
	if err != nil {
		return nil, nil, fmt.Errorf("srt: TMPDIR: %w", err)
	}
	// Ours, just made: the only folder here ever chmodded.
	if err := os.Chmod(dir, os.ModeSticky|0o777); err != nil {
		return nil, nil, errors.Join(fmt.Errorf("srt: TMPDIR: %w", err), release())
	}
	return []exec.Bind{{Host: dir, Inside: srtTmp}}, release, nil
}

// Target is the exec target of an srt or codex-sandbox profile, with what
// Prepare made for the run; Close removes it.
type Target struct {
	*exec.Target
	binds   []exec.Bind
	release func() error
}

// Close removes what Prepare made (srt's TMPDIR folder). Safe to call twice.
func (t *Target) Close(context.Context) error {
	if t.release == nil {
		return nil
	}
	return t.release()
}

// New returns the exec target for an srt or codex-sandbox profile.
// opts.Tools must hold the wrapper's command (agents.Cache.WrapperTools
// finds the cached install): a wrapper found on the host's PATH instead
// would not be the pinned version. opts.Binds is filled; the caller Closes
// the target when the run is over.
func New(opts exec.Options) (*Target, error) {
	if opts.Profile == nil {
		return nil, errors.New("realwrap: no profile")
	}
	if len(opts.Tools) == 0 {
		return nil, fmt.Errorf("realwrap: no command for the %s target's tool (agents.Cache.WrapperTools finds the cached install)", opts.Profile.Target)
	}
	binds, release, err := Prepare(opts.Profile)
	if err != nil {
		return nil, err
	}
	opts.Binds = append(append([]exec.Bind(nil), opts.Binds...), binds...)
	return &Target{Target: exec.New(opts), binds: binds, release: release}, nil
}
