package profile

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Targets whose sandbox is a wrapper command Gatehouse runs unmodified
// (targets/exec): any wrapper, or firejail with its arguments.
const (
	TargetExec     = "exec"
	TargetFirejail = "firejail"
)

// Exec is the exec section: a wrapper command that runs one command inside
// the team's sandbox. Gatehouse appends the session's init to Argv.
type Exec struct {
	// Argv is the wrapper up to the command it runs, "--" included if it
	// wants one: ["my-sandbox", "--policy", "{{file:policy}}", "--"].
	Argv []string `yaml:"argv"`
	// Version prints the wrapper's version, recorded as the runtime.
	Version []string `yaml:"version"`
	// Files are policy files next to the profile, by name; argv names one
	// as {{file:NAME}} (its path on the host, a copy made per session).
	Files map[string]string `yaml:"files"`
}

// Firejail is the firejail section: the team's firejail options. The
// target runs `firejail ARGS -- INIT`.
type Firejail struct {
	Args  []string          `yaml:"args"`
	Files map[string]string `yaml:"files"`
}

// WorkspacePath is where a wrapper target's workspace is bound: the
// session's own storage, where the gates look for it.
const WorkspacePath = "/workspace"

var workspaceRef = regexp.MustCompile(`^\{\{place:[a-z][a-z0-9-]*\}\}$`)

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

// Wrapper returns the wrapper command of an exec or firejail profile.
func (p *Profile) Wrapper() Wrapper {
	if w, ok := p.realWrapper(); ok {
		return w
	}
	switch p.Target {
	case TargetFirejail:
		argv := append([]string{"firejail"}, p.Firejail.Args...)
		return Wrapper{Argv: append(argv, "--"), Version: []string{"firejail", "--version"}, Files: p.facts.wrapFiles}
	case TargetExec:
		return Wrapper{Argv: p.Exec.Argv, Version: p.Exec.Version, Files: p.facts.wrapFiles}
	}
	return Wrapper{}
}

// IsWrapper reports whether the profile's target is a wrapper command.
func (p *Profile) IsWrapper() bool {
	switch p.Target {
	case TargetExec, TargetFirejail, TargetSRT, TargetCodex:
		return true
	}
	return false
}

var (
	fileName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)
	// WrapperRef matches the references only wrapper argv has.
	WrapperRef = regexp.MustCompile(`\{\{(file:[^{}]*|netns)\}\}`)
)

// wrapper checks the exec and firejail sections.
func (v *validator) wrapper() error {
	p := v.p
	execSet := len(p.Exec.Argv) > 0 || len(p.Exec.Version) > 0 || len(p.Exec.Files) > 0
	fjSet := len(p.Firejail.Args) > 0 || len(p.Firejail.Files) > 0
	if execSet && p.Target != TargetExec {
		return v.fail("exec", fmt.Errorf("only for target exec (target is %s)", p.Target))
	}
	if fjSet && p.Target != TargetFirejail {
		return v.fail("firejail", fmt.Errorf("only for target firejail (target is %s)", p.Target))
	}
	if p.Workspace != "" && !p.IsWrapper() {
		return v.fail("workspace", fmt.Errorf("only for wrapper targets (exec, firejail, srt, codex-sandbox); target %s binds its storage in its own section", p.Target))
	}
	if !p.IsWrapper() {
		return nil
	}
	if p.Workspace != "" && !workspaceRef.MatchString(p.Workspace) {
		return v.fail("workspace", fmt.Errorf("%q: a place the run provides, as {{place:NAME}} (usually {{place:storage}})", p.Workspace))
	}
	if len(p.Bwrap.Args) > 0 {
		return v.fail("bwrap", fmt.Errorf("not for target %s", p.Target))
	}
	if p.Network == NetworkHost {
		return v.fail("network", fmt.Errorf("target %s runs its wrapper in a session namespace of its own (lab) or an empty one (none), not in the lab's", p.Target))
	}
	section, files, argv := "exec", p.Exec.Files, p.Exec.Argv
	if sec, fs, err := v.realWrapperFiles(); err != nil {
		return err
	} else if sec != "" {
		section, files, argv = sec, fs, nil
	} else if p.Target == TargetFirejail {
		section, files, argv = "firejail", p.Firejail.Files, p.Firejail.Args
		for i, a := range argv {
			if a == "--" {
				return v.failItem("firejail.args", i, errors.New(`"--" is added by the target, before the init`))
			}
		}
	} else {
		if len(argv) == 0 || argv[0] == "" {
			return v.fail("exec.argv", errors.New("required for target exec: the wrapper command, e.g. [my-sandbox, --policy, \"{{file:policy}}\", --]"))
		}
		if len(p.Exec.Version) > 0 && p.Exec.Version[0] == "" {
			return v.fail("exec.version", errors.New("the command's first word is empty"))
		}
	}
	p.facts.wrapFiles = map[string]string{}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !fileName.MatchString(n) {
			return v.fail(section+".files."+n, fmt.Errorf("%q: a file's name is lower-case letters, digits, '.', '_' and '-'", n))
		}
		key, err := v.readRef(files[n])
		if err != nil {
			return v.fail(section+".files."+n, err)
		}
		p.facts.wrapFiles[n] = key
	}
	for i, a := range argv {
		for _, m := range WrapperRef.FindAllStringSubmatch(a, -1) {
			name, isFile := strings.CutPrefix(m[1], "file:")
			if !isFile {
				if p.Network != NetworkLab {
					return v.failItem(section+".args", i, fmt.Errorf("{{netns}} needs network: lab"))
				}
				continue
			}
			if _, ok := files[name]; !ok {
				return v.failItem(fieldOf(section), i, fmt.Errorf("{{file:%s}}: no such name in %s.files", name, section))
			}
		}
	}
	return nil
}

func fieldOf(section string) string {
	if section == "firejail" {
		return "firejail.args"
	}
	return "exec.argv"
}
