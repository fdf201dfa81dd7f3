package realwrap

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/gatehouse-dev/gatehouse/internal/targets/exec"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// Targets that run a real sandbox wrapper agents use, on top of the exec
// target: Anthropic's sandbox-runtime and Codex's own sandbox. Their tools
// come from Gatehouse's cache (gatehouse agents install srt|codex).
const (
	KindSRT   = "srt"
	KindCodex = "codex-sandbox"
)

// Kind is the srt or the codex-sandbox target's kind (the sections srt or
// codex, and workspace).
type Kind struct{ codex bool }

// NewKind returns the kind of target name, KindSRT or KindCodex.
func NewKind(name string) Kind { return Kind{codex: name == KindCodex} }

var _ profile.Kind = Kind{}

// Name is KindSRT or KindCodex.
func (k Kind) Name() string {
	if k.codex {
		return KindCodex
	}
	return KindSRT
}

// CodexHome is the per-session CODEX_HOME: in the session's work folder
// (Codex must be able to write it), named .codex so that Codex's own
// sandbox keeps it read-only for the command.
const CodexHome = "/gatehouse/work/.codex"

// SRTWrapperTmp is srt's own TMPDIR (not its sandbox's, which srt sets to
// /tmp/claude): a folder of the session's work folder.
const SRTWrapperTmp = "/gatehouse/work/.srt-tmp"

var codexProfileName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Load checks the srt or codex section; its file is the wrapper's one
// policy file.
func (k Kind) Load(l *profile.Loading) error {
	if err := exec.CheckWrapperPlace(l); err != nil {
		return err
	}
	p := l.Profile()
	if !k.codex {
		if SRTOf(p).Settings == "" {
			return l.Fail("srt.settings", errors.New("required: the srt settings JSON next to the profile"))
		}
		return exec.LoadWrapperFiles(l, "srt", map[string]string{"settings.json": SRTOf(p).Settings}, nil)
	}
	c := CodexOf(p)
	if c.Config == "" {
		return l.Fail("codex.config", errors.New("required: the Codex config.toml next to the profile"))
	}
	if !codexProfileName.MatchString(c.Profile) {
		return l.Fail("codex.profile", fmt.Errorf("%q: required, the name of a [permissions.NAME] table in the config", c.Profile))
	}
	return exec.LoadWrapperFiles(l, "codex", map[string]string{"config.toml": c.Config}, nil)
}

// Describe: the wrapper's command (its first word names the tool; the exec
// target replaces it with the cached install's command) and its /tmp.
func (k Kind) Describe(p *profile.Profile) profile.Description {
	if k.codex {
		c := CodexOf(p)
		return exec.DescribeWrapper(p, profile.Wrapper{
			// -C: the work folder is Codex's workspace, so writable for the command.
			Argv:      []string{"codex", "sandbox", "-P", c.Profile, "-C", "/gatehouse/work", "--"},
			Version:   []string{"codex", "--version"},
			Files:     p.WrapperFiles(),
			Env:       map[string]string{"CODEX_HOME": CodexHome},
			WorkFiles: map[string]string{".codex/config.toml": "config.toml"},
		}, exec.WrapperFacts{PolicyField: "codex.config", HostTmp: "codex-sandbox: workspace-write leaves the host's /tmp writable to the sandbox"})
	}
	return exec.DescribeWrapper(p, profile.Wrapper{
		Argv:    []string{"srt", "--settings", "{{file:settings.json}}", "--"},
		Version: []string{"srt", "--version"},
		Files:   p.WrapperFiles(),
		// srt puts its proxy sockets (claude-http-*, srt-mux-PID-*) in
		// its TMPDIR and leaves them when killed; in the host's /tmp a
		// later srt that gets the same pid failed with EADDRINUSE.
		// The session's own folder goes with the session.
		Env:      map[string]string{"TMPDIR": SRTWrapperTmp},
		WorkDirs: []string{".srt-tmp"},
	}, exec.WrapperFacts{PolicyField: "srt.settings", HostTmp: "srt: the sandbox writes its TMPDIR /tmp/claude, in the host's /tmp"})
}
