// Package realwrap builds the srt and codex-sandbox targets: the exec
// target with the wrapper command taken from Gatehouse's tool cache
// (package agents, pinned versions), and the host preparation each tool
// needs. See docs/real-sandboxes.md.
package realwrap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gatehouse-dev/gatehouse/agents"
	"github.com/gatehouse-dev/gatehouse/targets/exec"
	"github.com/gatehouse-dev/gatehouse/targets/profile"
)

// ErrNotInstalled means the target's tool is not in the cache; the message
// says which command installs it.
var ErrNotInstalled = errors.New("sandbox tool not installed")

// SRTTmp is srt's TMPDIR: bound writable into every srt sandbox from the
// host, so it must exist there, writable by whichever user runs srt.
const SRTTmp = "/tmp/claude"

// Tools returns the exec target's Tools for p: the cached install's command
// for the tool p's target runs.
func Tools(cache agents.Cache, p *profile.Profile) (map[string][]string, error) {
	switch p.Target {
	case profile.TargetSRT:
		in, err := open(cache, "srt", agents.SandboxRuntime())
		if err != nil {
			return nil, err
		}
		node := filepath.Join(in.Dir, filepath.FromSlash(in.Runtime.Path))
		cli := filepath.Join(in.Dir, filepath.FromSlash(in.Binary.Path))
		return map[string][]string{"srt": {node, cli}}, nil
	case profile.TargetCodex:
		a, _ := agents.Lookup("codex")
		in, err := open(cache, "codex", a)
		if err != nil {
			return nil, err
		}
		return map[string][]string{"codex": {filepath.Join(in.Dir, filepath.FromSlash(in.Binary.Path))}}, nil
	}
	return nil, nil
}

func open(cache agents.Cache, name string, a agents.Adapter) (agents.Installed, error) {
	in, err := cache.Open(a)
	if err != nil {
		return in, fmt.Errorf("%w: %s %s: %v (install it: gatehouse agents install %s, or make tools)", ErrNotInstalled, a.Name, a.Version, err, name)
	}
	return in, nil
}

// Prepare makes what a tool expects on the host: srt's TMPDIR. It is
// world-writable and sticky like /tmp, because srt binds the host's folder
// (shared by every srt sandbox on the machine: a known srt weakness that
// the cross-session gates measure).
func Prepare(p *profile.Profile) error {
	if p.Target != profile.TargetSRT {
		return nil
	}
	if err := os.Mkdir(SRTTmp, 0o1777); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("srt: %s: %w", SRTTmp, err)
	}
	st, err := os.Stat(SRTTmp)
	if err != nil {
		return fmt.Errorf("srt: %s: %w", SRTTmp, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("srt: %s is not a folder", SRTTmp)
	}
	if st.Mode().Perm()&0o002 == 0 || st.Mode()&os.ModeSticky == 0 {
		return os.Chmod(SRTTmp, 0o1777)
	}
	return nil
}

// New returns the exec target for an srt or codex-sandbox profile, or
// ErrNotInstalled. opts.Tools is filled from cache.
func New(cache agents.Cache, opts exec.Options) (*exec.Target, error) {
	if opts.Profile == nil {
		return nil, errors.New("realwrap: no profile")
	}
	tools, err := Tools(cache, opts.Profile)
	if err != nil {
		return nil, err
	}
	if err := Prepare(opts.Profile); err != nil {
		return nil, err
	}
	opts.Tools = tools
	return exec.New(opts), nil
}
