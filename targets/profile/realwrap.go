package profile

import (
	"errors"
	"fmt"
	"regexp"
)

// Targets that run a real sandbox wrapper agents use, on top of the exec
// target: Anthropic's sandbox-runtime and Codex's own sandbox. Their tools
// come from Gatehouse's cache (gatehouse agents install srt|codex).
const (
	TargetSRT   = "srt"
	TargetCodex = "codex-sandbox"
)

// SRT is the srt section: the settings JSON next to the profile.
type SRT struct {
	Settings string `yaml:"settings"`
}

// Codex is the codex section: the Codex config.toml next to the profile and
// the permissions profile in it that `codex sandbox -P` applies.
type Codex struct {
	Config  string `yaml:"config"`
	Profile string `yaml:"profile"`
}

// CodexHome is the per-session CODEX_HOME: in the session's work folder
// (Codex must be able to write it), named .codex so that Codex's own
// sandbox keeps it read-only for the command.
const CodexHome = "/gatehouse/work/.codex"

// SRTWrapperTmp is srt's own TMPDIR (not its sandbox's, which srt sets to
// /tmp/claude): a folder of the session's work folder.
const SRTWrapperTmp = "/gatehouse/work/.srt-tmp"

var codexProfileName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// realWrapper returns the wrapper of an srt or codex-sandbox profile. The
// first word names the tool; the exec target replaces it with the cached
// install's command.
func (p *Profile) realWrapper() (Wrapper, bool) {
	switch p.Target {
	case TargetSRT:
		return Wrapper{
			Argv:    []string{"srt", "--settings", "{{file:settings.json}}", "--"},
			Version: []string{"srt", "--version"},
			Files:   p.facts.wrapFiles,
			// srt puts its proxy sockets (claude-http-*, srt-mux-PID-*) in
			// its TMPDIR and leaves them when killed; in the host's /tmp a
			// later srt that gets the same pid failed with EADDRINUSE.
			// The session's own folder goes with the session.
			Env:      map[string]string{"TMPDIR": SRTWrapperTmp},
			WorkDirs: []string{".srt-tmp"},
		}, true
	case TargetCodex:
		return Wrapper{
			// -C: the work folder is Codex's workspace, so writable for the command.
			Argv:      []string{"codex", "sandbox", "-P", p.Codex.Profile, "-C", "/gatehouse/work", "--"},
			Version:   []string{"codex", "--version"},
			Files:     p.facts.wrapFiles,
			Env:       map[string]string{"CODEX_HOME": CodexHome},
			WorkFiles: map[string]string{".codex/config.toml": "config.toml"},
		}, true
	}
	return Wrapper{}, false
}

// realWrapperFiles checks the srt and codex sections and returns their
// files by {{file:NAME}} name.
func (v *validator) realWrapperFiles() (section string, files map[string]string, err error) {
	p := v.p
	if p.SRT != (SRT{}) && p.Target != TargetSRT {
		return "", nil, v.fail("srt", fmt.Errorf("only for target srt (target is %s)", p.Target))
	}
	if p.Codex != (Codex{}) && p.Target != TargetCodex {
		return "", nil, v.fail("codex", fmt.Errorf("only for target codex-sandbox (target is %s)", p.Target))
	}
	switch p.Target {
	case TargetSRT:
		if p.SRT.Settings == "" {
			return "", nil, v.fail("srt.settings", errors.New("required: the srt settings JSON next to the profile"))
		}
		return "srt", map[string]string{"settings.json": p.SRT.Settings}, nil
	case TargetCodex:
		if p.Codex.Config == "" {
			return "", nil, v.fail("codex.config", errors.New("required: the Codex config.toml next to the profile"))
		}
		if !codexProfileName.MatchString(p.Codex.Profile) {
			return "", nil, v.fail("codex.profile", fmt.Errorf("%q: required, the name of a [permissions.NAME] table in the config", p.Codex.Profile))
		}
		return "codex", map[string]string{"config.toml": p.Codex.Config}, nil
	}
	return "", nil, nil
}
