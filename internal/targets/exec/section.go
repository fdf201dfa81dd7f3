package exec

import (
	"fmt"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// Section is the exec section: a wrapper command that runs one command
// inside the team's sandbox. Gatehouse appends the session's init to Argv.
type Section struct {
	// Argv is the wrapper up to the command it runs, "--" included if it
	// wants one: ["my-sandbox", "--policy", "{{file:policy}}", "--"].
	Argv []string `yaml:"argv"`
	// Version prints the wrapper's version, recorded as the runtime.
	Version []string `yaml:"version"`
	// Files are policy files next to the profile, by name; argv names one
	// as {{file:NAME}} (its path on the host, a copy made per session).
	Files map[string]string `yaml:"files"`
}

// Empty: empty lists say nothing either.
func (s Section) Empty() bool { return len(s.Argv) == 0 && len(s.Version) == 0 && len(s.Files) == 0 }

// Firejail is the firejail section: the team's firejail options. The
// target runs `firejail ARGS -- INIT`.
type Firejail struct {
	Args  []string          `yaml:"args"`
	Files map[string]string `yaml:"files"`
}

// Empty: empty lists say nothing either.
func (s Firejail) Empty() bool { return len(s.Args) == 0 && len(s.Files) == 0 }

// SectionOf is p's exec section.
func SectionOf(p *profile.Profile) *Section { return profile.SectionOf[Section](p, KindExec) }

// FirejailOf is p's firejail section.
func FirejailOf(p *profile.Profile) *Firejail { return profile.SectionOf[Firejail](p, KindFirejail) }

// WorkspaceOf is p's workspace, for wrapper targets: the host folder the
// platform hands the agent ({{place:storage}}: the session's own
// storage), bound read-write at /workspace in the wrapper's view before
// it starts. What the sandbox then lets the agent do there is the
// wrapper's decision.
func WorkspaceOf(p *profile.Profile) *string { return profile.SectionOf[string](p, "workspace") }

// WorkspaceSection is the workspace every wrapper kind reads (these and
// internal/targets/realwrap's).
var WorkspaceSection = profile.Section{
	Name: "workspace",
	Zero: "",
	Elsewhere: func(owners []string, target string) error {
		return fmt.Errorf("only for wrapper targets (%s); target %s binds its storage in its own section", strings.Join(owners, ", "), target)
	},
}

// Sections are the kind's own section and workspace.
func (k Kind) Sections() []profile.Section {
	if k.firejail {
		return []profile.Section{{Name: KindFirejail, Zero: Firejail{}}, WorkspaceSection}
	}
	return []profile.Section{{Name: KindExec, Zero: Section{}}, WorkspaceSection}
}

// words is the wrapper's argument list and where the profile says it.
func (k Kind) words(p *profile.Profile) profile.Words {
	if k.firejail {
		return profile.Words{Field: "firejail.args", List: FirejailOf(p).Args}
	}
	return profile.Words{Field: "exec.argv", List: SectionOf(p).Argv}
}

var _ profile.Referrer = Kind{}

// References checks those in the wrapper's arguments; its own
// {{file:NAME}} and {{netns}} were checked by Load.
func (k Kind) References(l *profile.Loading) error {
	w := k.words(l.Profile())
	for i, a := range w.List {
		if err := l.Reference(profile.WrapperRef.ReplaceAllString(a, "")); err != nil {
			return l.FailItem(w.Field, i, fmt.Errorf("[%d]: %w", i, err))
		}
	}
	return nil
}
