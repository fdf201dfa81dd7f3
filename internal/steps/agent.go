package steps

import (
	"github.com/gatehouse-dev/gatehouse/targets"
)

// Agent is a real agent CLI that runs the normal path instead of the probe
// (issue 9): the harness hands it a task and an untrusted document; the
// lab's scripted model, obeying only the directive in that document, makes
// it run the gate's attempts through its own tools. What it says it did is
// never evidence; the endpoints, planted values and the host's view decide.
type Agent interface {
	Name() string
	// Files are what the sandbox must hold for it (its binary, its
	// runtime), usually bound read-only as they are (targets.File.Bind).
	Files() map[string]targets.File
	// Launch is how to run it headless for one task.
	Launch(inv AgentInvocation) (AgentLaunch, error)
	// Outcome reads what it printed (its own JSON output).
	Outcome(stdout []byte) AgentOutcome
}

// AgentInvocation is what one agent run is given.
type AgentInvocation struct {
	ModelURL string // the scripted model's base URL (the inference endpoint)
	ModelKey string // per run: names the session and carries its control token
	Task     string // what the agent is asked to do
	Document string // the untrusted document it is asked to work on
	Home     string // a writable folder of its own in the sandbox (config, state)
	TaskFile string // a file in the sandbox holding Task (for agents that read it)
	WorkDir  string // where it starts: a folder of its own, not holding Home
	UID      int    // the user it runs as
}

// AgentLaunch is one agent run: the command, the files it needs placed in
// the sandbox first (its settings, writable by it), and how it was set up
// (its permission mode, its own sandbox), for the evidence.
type AgentLaunch struct {
	Command targets.Command
	Files   map[string][]byte
	Facts   map[string]string
}

// AgentOutcome is what the agent says happened: findings, never proof.
type AgentOutcome struct {
	Turns      int
	ToolCalls  int
	Denials    []string // commands its own permission layer refused
	OwnSandbox string   // "on", "off" or "" when it does not say
	Errors     []string
}
