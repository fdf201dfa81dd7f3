package runner

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/gatehouse-dev/gatehouse/internal/agents"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/lab/model"
	"github.com/gatehouse-dev/gatehouse/internal/steps"
	"github.com/gatehouse-dev/gatehouse/internal/targets/docker/dockerkind"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// agentBridge is an installed agent CLI as the steps run it on the normal
// path: agents.Adapter (what to run, how to read it) over steps.Agent.
type agentBridge struct {
	a          agents.Adapter
	in         agents.Installed
	ownSandbox bool
	root       bool // the normal path runs as uid 0
	binds      []agents.Bind
	// libc: the target's sandbox has no C library of its own (a
	// FROM-scratch image), so the host's is bound read-only for agents
	// built against it (Claude Code, Node).
	libc bool
}

// openAgent looks the agent up and opens its cached install. Nothing is
// fetched here: a run never downloads, and never falls back to the probe.
func openAgent(name, sandbox string, normalUID int, target string) (*agentBridge, error) {
	a, err := agents.Lookup(name)
	if err != nil {
		return nil, &ConfigError{err}
	}
	in, err := agents.DefaultCache(os.Getenv).Open(a)
	if err != nil {
		if errors.Is(err, agents.ErrNotInstalled) {
			return nil, &ConfigError{fmt.Errorf("run: agent %s is not installed (%v): run 'gatehouse agents install %s' (it fetches %s@%s from the npm registry into the cache); a run never fetches and never falls back to the probe", name, err, name, a.Package, a.Version)}
		}
		return nil, &ConfigError{fmt.Errorf("run: agent %s: %w", name, err)}
	}
	b := &agentBridge{a: a, in: in, ownSandbox: sandbox == "on", root: normalUID == 0,
		libc: target == dockerkind.Docker || target == dockerkind.GVisor}
	// The binds do not depend on the invocation: read them off a launch.
	l, err := b.launch(steps.AgentInvocation{ModelURL: "http://" + lab.InferenceV4, ModelKey: "gh.probe", Task: "x",
		Home: "/gatehouse/work/gh-home-0", WorkDir: "/gatehouse/work/gh-run-0"})
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("run: agent %s: %w", name, err)}
	}
	b.binds = l.binds
	return b, nil
}

type launched struct {
	steps.AgentLaunch
	binds []agents.Bind
}

func (b *agentBridge) launch(inv steps.AgentInvocation) (launched, error) {
	l, err := b.a.Launch(b.in, agents.Invocation{
		ModelURL: inv.ModelURL, Key: inv.ModelKey, Task: inv.Task, TaskFile: inv.TaskFile,
		Home: inv.Home, WorkDir: inv.WorkDir, Root: b.root, OwnSandbox: b.ownSandbox, NestedSandbox: b.ownSandbox,
	})
	if err != nil {
		return launched{}, err
	}
	cmd := l.Command
	cmd.Dir = inv.WorkDir
	return launched{AgentLaunch: steps.AgentLaunch{Command: cmd, Files: l.Files, Facts: l.Facts}, binds: l.Binds}, nil
}

func (b *agentBridge) Name() string { return b.a.Name }

func (b *agentBridge) Files() map[string]targets.File {
	out := map[string]targets.File{}
	for _, bd := range b.binds {
		out[bd.Sandbox] = targets.File{HostPath: bd.Host, Bind: true}
	}
	if b.libc {
		for sandbox, host := range libcBinds {
			if _, err := os.Stat(host); err == nil {
				out[sandbox] = targets.File{HostPath: host, Bind: true}
			}
		}
	}
	return out
}

func (b *agentBridge) Launch(inv steps.AgentInvocation) (steps.AgentLaunch, error) {
	l, err := b.launch(inv)
	return l.AgentLaunch, err
}

func (b *agentBridge) Outcome(stdout []byte) steps.AgentOutcome {
	o := b.a.Parse(bytes.NewReader(stdout))
	out := steps.AgentOutcome{Turns: o.Turns, ToolCalls: len(o.ToolCalls), Errors: o.Errors}
	for _, d := range o.Denials {
		out.Denials = append(out.Denials, fmt.Sprintf("%s: %s", d.Tool, d.Command))
	}
	switch o.OwnSandbox {
	case "active":
		out.OwnSandbox = "on"
	case "inactive":
		out.OwnSandbox = "off"
	}
	return out
}

// libcBinds are the host's C library and loader (Debian's multiarch
// layout), by the path a dynamically linked binary asks for.
// With them, the host's bash: agents run their shell tool through it
// (Qwen Code needs it by name; a FROM-scratch image has only busybox).
var libcBinds = map[string]string{
	"/lib64":                "/usr/lib64",
	"/lib/x86_64-linux-gnu": "/usr/lib/x86_64-linux-gnu",
	"/bin/bash":             "/usr/bin/bash",
}

// labModel is the lab's scripted model as the steps register runs with it.
type labModel struct{ l *lab.Lab }

func (m labModel) Script(key, session, doc string) error {
	return m.l.ScriptModel(key, model.Script{Session: session, Document: doc})
}
