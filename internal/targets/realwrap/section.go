package realwrap

import (
	"github.com/gatehouse-dev/gatehouse/internal/targets/exec"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// SRT is the srt section: the settings file srt reads, next to the
// profile.
type SRT struct {
	Settings string `yaml:"settings"`
}

// Codex is the codex section: the Codex config.toml next to the profile
// and the name of its [permissions.NAME] table the sandbox runs under.
type Codex struct {
	Config  string `yaml:"config"`
	Profile string `yaml:"profile"`
}

// SRTOf is p's srt section.
func SRTOf(p *profile.Profile) *SRT { return profile.SectionOf[SRT](p, "srt") }

// CodexOf is p's codex section.
func CodexOf(p *profile.Profile) *Codex { return profile.SectionOf[Codex](p, "codex") }

// Sections are the kind's own section (srt, codex) and workspace.
func (k Kind) Sections() []profile.Section {
	if k.codex {
		return []profile.Section{{Name: "codex", Zero: Codex{}}, exec.WorkspaceSection}
	}
	return []profile.Section{{Name: "srt", Zero: SRT{}}, exec.WorkspaceSection}
}
