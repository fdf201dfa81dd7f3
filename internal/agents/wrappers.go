package agents

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/gatehouse-dev/gatehouse/internal/targets/realwrap"
)

// WrapperTools returns the commands the exec target runs for a target that
// wraps a real sandbox tool (realwrap.KindSRT, realwrap.KindCodex), by the
// tool's name in the profile, from the cached installs: what
// realwrap.New's exec.Options.Tools take. Another target needs none (nil).
// A tool the cache lacks is ErrNotInstalled, its message saying which
// command installs it.
func (c Cache) WrapperTools(target string) (map[string][]string, error) {
	switch target {
	case realwrap.KindSRT:
		in, err := c.openTool("srt", SandboxRuntime())
		if err != nil {
			return nil, err
		}
		node := filepath.Join(in.Dir, filepath.FromSlash(in.Runtime.Path))
		cli := filepath.Join(in.Dir, filepath.FromSlash(in.Binary.Path))
		return map[string][]string{"srt": {node, cli}}, nil
	case realwrap.KindCodex:
		in, err := c.openTool("codex", codex())
		if err != nil {
			return nil, err
		}
		return map[string][]string{"codex": {filepath.Join(in.Dir, filepath.FromSlash(in.Binary.Path))}}, nil
	}
	return nil, nil
}

// openTool opens a's install; any failure is ErrNotInstalled, with the
// install command for name.
func (c Cache) openTool(name string, a Adapter) (Installed, error) {
	in, err := c.Open(a)
	if err == nil {
		return in, nil
	}
	if !errors.Is(err, ErrNotInstalled) {
		err = fmt.Errorf("%w: %s %s: %w", ErrNotInstalled, a.Name, a.Version, err)
	}
	return in, fmt.Errorf("sandbox tool: %w (install it: gatehouse agents install %s, or make tools)", err, name)
}
