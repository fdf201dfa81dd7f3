// Package agents installs real agent CLIs (Claude Code, Codex, Qwen Code, or
// a team's own command) and says how to run each one headless inside a
// sandbox against the lab's scripted model, and how to read what it printed.
//
// An Adapter is data plus three functions: what to fetch from the npm
// registry (pinned versions, cached under $GATEHOUSE_CACHE/agents), how an
// Invocation becomes a targets.Command with the read-only binds it needs,
// and how its JSON output becomes an Outcome. Nothing here starts a
// sandbox: the harness does, with what Launch returns.
package agents

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// API is the wire format an agent speaks to its model.
type API string

const (
	AnthropicMessages API = "anthropic-messages"
	OpenAIResponses   API = "openai-responses"
	OpenAIChat        API = "openai-chat"
)

// Root is where an agent's files are bound read-only inside the sandbox:
// Root/<adapter name>/... .
const Root = "/gatehouse/agent"

// ErrUnsupported means the adapter cannot do what was asked here (its own
// sandbox, or running at all on this machine); the message says why.
var ErrUnsupported = targets.ErrUnsupported

// Adapter is one agent CLI. Build it with Lookup.
type Adapter struct {
	Name    string // "claude-code", "codex", "qwen-code", "exec:/abs/path"
	Package string // the npm package pinned ("" for exec)
	Version string // its exact pinned version
	API     API    // what it speaks to the model (exec: from the Invocation)

	agent   part  // where its code comes from and which file identifies it
	runtime *part // an interpreter fetched with it (Qwen: Node 22), or nil
	// modules are the npm dependencies of a package that does not bundle
	// them (srt), each pinned exactly and unpacked into the agent
	// package's node_modules, where Node's resolver finds them.
	modules []part

	launch func(a Adapter, in Installed, inv Invocation) (Launch, error)
	parse  func(r io.Reader) Outcome
}

// part is one npm package of an install. When platform is set, the files
// come from that platform sub-package instead (the one the main package's
// optionalDependencies name; Node's is named by convention).
type part struct {
	pkg, version string
	platform     string // e.g. "@anthropic-ai/claude-code-linux-x64"
	file         string // the identifying file, relative to the package folder
	// under is the folder the package is unpacked below ("" for the
	// install folder itself): "<main package>/node_modules" for modules.
	under string
	// exec are files the package ships without the executable bit that
	// the agent runs (a package manager's postinstall would chmod them; the
	// install is read-only in the sandbox, so the agent itself cannot).
	exec []string
}

// Invocation is what the harness gives an adapter for one session. Paths
// are inside the sandbox.
type Invocation struct {
	ModelURL string // base URL of the model, without /v1: "http://203.0.113.100"
	Key      string // per-session API key (the scripted model picks the script by it)
	Model    string // model name to ask for; "" means "gh-scripted"
	Task     string // the task text given as the prompt
	TaskFile string // where the exec contract's task file goes (Launch.Files holds it)
	Home     string // writable per-session folder for HOME and the agent's config; not under /tmp
	// WorkDir is the folder the agent starts in: the session's working
	// directory, where the harness starts the command (targets.Command has
	// no folder of its own). Codex also gets it as -C. "" means Home.
	WorkDir string
	Root    bool // the agent runs as uid 0 (Claude then needs IS_SANDBOX=1 for bypass mode)
	// Permissions is the agent's own permission mode, in its own words:
	// Claude --permission-mode (default, acceptEdits, plan, dontAsk,
	// bypassPermissions), Codex approval_policy (never, on-request,
	// on-failure), Qwen --approval-mode (plan, default, auto-edit, auto,
	// yolo). "" is the mode that runs every tool call unasked
	// (bypassPermissions, never, yolo): the worst case, and the one where
	// the sandbox alone must hold. Headless, a mode that would ask refuses
	// instead: Claude reports it in Outcome.Denials; Qwen takes the shell
	// tool away from the model (nothing to deny: the model is never
	// offered it).
	Permissions string
	// OwnSandbox switches the agent's own sandbox on (--agent-sandbox on).
	OwnSandbox bool
	// NestedSandbox lets the agent's own sandbox run weaker inside another
	// one (Claude: sandbox.enableWeakerNestedSandbox). Inside bwrap or a
	// container /proc is partly covered and Claude's bwrap cannot mount a
	// new one: strict, every command then fails; weaker, commands run in
	// its sandbox without a fresh /proc. Ignored unless OwnSandbox.
	NestedSandbox bool
	// AllowedDomains are the hosts the agent's own sandbox lets commands
	// reach when OwnSandbox is on (Claude); empty means none.
	AllowedDomains []string
	// API is the wire format an exec: agent must speak (GATEHOUSE_MODEL_API);
	// ignored by the CLIs, which each speak one.
	API API
}

// Bind is a host path the sandbox must see read-only at Sandbox.
type Bind struct {
	Host    string `json:"host"`
	Sandbox string `json:"sandbox"`
}

// Launch is how to run the agent in a session. Command.Stdin is nil, which
// every target turns into /dev/null (Codex reads stdin when it is not a TTY).
type Launch struct {
	Command    targets.Command
	Binds      []Bind
	Executable string // in-sandbox path of argv[0]
	// Files must be placed in the sandbox before the command runs, keyed
	// by in-sandbox path (agent settings under Home), writable by the agent.
	Files map[string][]byte
	// Facts say how the agent was set up, for the evidence: its permission
	// mode, whether its own sandbox was asked for and how ("own_sandbox"),
	// the settings passed.
	Facts map[string]string
}

// Names lists the built-in adapters (exec:CMD is open-ended).
func Names() []string { return []string{"claude-code", "codex", "qwen-code"} }

// Lookup returns the adapter called name: a built-in one, or "exec:CMD"
// with CMD a host path to a team's own agent.
func Lookup(name string) (Adapter, error) {
	switch {
	case name == "claude-code":
		return claudeCode(), nil
	case name == "codex":
		return codex(), nil
	case name == "qwen-code":
		return qwenCode(), nil
	case strings.HasPrefix(name, "exec:"):
		return execAgent(strings.TrimPrefix(name, "exec:"))
	}
	return Adapter{}, fmt.Errorf("agents: unknown agent %q (have %s, or exec:PATH)", name, strings.Join(Names(), ", "))
}

// Launch turns inv into the command, env and binds for one session. in is
// the install the adapter runs from (Cache.Open or Cache.Install).
func (a Adapter) Launch(in Installed, inv Invocation) (Launch, error) {
	if inv.ModelURL == "" || inv.Key == "" || inv.Task == "" {
		return Launch{}, errors.New("agents: an invocation needs ModelURL, Key and Task")
	}
	if inv.Home == "" || !filepath.IsAbs(inv.Home) {
		return Launch{}, fmt.Errorf("agents: Home %q must be an absolute in-sandbox folder", inv.Home)
	}
	if inv.Model == "" {
		inv.Model = "gh-scripted"
	}
	if inv.WorkDir == "" {
		inv.WorkDir = inv.Home
	}
	if in.Agent != a.Name {
		return Launch{}, fmt.Errorf("agents: install of %q given to adapter %q", in.Agent, a.Name)
	}
	if a.launch == nil {
		return Launch{}, fmt.Errorf("agents: %s is a tool, not an agent: it has no launch", a.Name)
	}
	return a.launch(a, in, inv)
}

// Parse reads the agent's standard output (hostile input: malformed lines
// are skipped and counted as errors, never fatal).
func (a Adapter) Parse(stdout io.Reader) Outcome { return a.parse(stdout) }

// sandboxPath is where a file of the install appears inside the sandbox.
func (a Adapter) sandboxPath(rel string) string {
	return filepath.Join(Root, a.Name, filepath.FromSlash(rel))
}

// installBinds binds the whole install folder: the binary and whatever it
// loads next to it (Codex's rg, Qwen's bundled JS and Node).
func (a Adapter) installBinds(in Installed) []Bind {
	return []Bind{{Host: in.Dir, Sandbox: filepath.Join(Root, a.Name)}}
}

// baseEnv is what every agent gets: its own HOME and a plain PATH.
func baseEnv(inv Invocation) map[string]string {
	return map[string]string{
		"HOME": inv.Home,
		"PATH": "/usr/local/bin:/usr/bin:/bin",
		"LANG": "C.UTF-8",
	}
}

// permissions checks inv.Permissions against an agent's modes; the first
// is the default.
func permissions(agent, mode string, modes ...string) (string, error) {
	if mode == "" {
		return modes[0], nil
	}
	for _, m := range modes {
		if m == mode {
			return m, nil
		}
	}
	return "", errorf("%s: unknown permission mode %q (have %s)", agent, mode, strings.Join(modes, ", "))
}

func errorf(format string, a ...any) error { return fmt.Errorf("agents: "+format, a...) }
