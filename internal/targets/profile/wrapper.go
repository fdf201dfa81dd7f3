package profile

import "regexp"

// WorkspacePath is where a wrapper target's workspace is bound: the
// session's own storage, where the gates look for it.
const WorkspacePath = "/workspace"

// Wrapper is a wrapper target's command, whatever section gave it.
type Wrapper struct {
	Argv    []string
	Version []string
	// Files maps a {{file:NAME}} name to its key in Profile.Files.
	Files map[string]string
	// Env is set for the wrapper over the profile's env (CODEX_HOME).
	Env map[string]string
	// WorkFiles are copies of Files made under /gatehouse/work before the
	// wrapper starts, owned by the path's user: relative path -> Files name.
	WorkFiles map[string]string
	// WorkDirs are folders (one level, relative) made under /gatehouse/work
	// before the wrapper starts, owned by the path's user.
	WorkDirs []string
}

// Wrapper returns the wrapper command of a wrapper target's profile (the
// zero Wrapper for other targets).
func (p *Profile) Wrapper() Wrapper {
	if w := p.describe().Wrapper; w != nil {
		return *w
	}
	return Wrapper{}
}

// IsWrapper reports whether the profile's target is a wrapper command.
func (p *Profile) IsWrapper() bool { return p.describe().Wrapper != nil }

// WrapperRef matches the references only wrapper argv has.
var WrapperRef = regexp.MustCompile(`\{\{(file:[^{}]*|netns)\}\}`)
