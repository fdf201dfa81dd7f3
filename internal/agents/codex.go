package agents

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// codex is OpenAI's Codex CLI: a Rust binary shipped in a platform package
// (an npm alias, "npm:@openai/codex@<version>-linux-x64").
func codex() Adapter {
	const pkg, version = "@openai/codex", "0.171.0"
	return Adapter{
		Name: "codex", Package: pkg, Version: version, API: OpenAIResponses,
		agent: part{pkg: pkg, version: version, platform: pkg + "-" + platformSuffix(),
			file: "vendor/" + codexTriple() + "/bin/codex"},
		launch: codexLaunch,
		parse:  codexParse,
	}
}

func codexTriple() string {
	if platformSuffix() == "linux-arm64" {
		return "aarch64-unknown-linux-musl"
	}
	return "x86_64-unknown-linux-musl"
}

func codexLaunch(a Adapter, in Installed, inv Invocation) (Launch, error) {
	// Codex refuses, or misbehaves, with its home under /tmp (it treats
	// /tmp as the writable scratch of its own sandbox).
	if inv.Home == "/tmp" || strings.HasPrefix(inv.Home, "/tmp/") {
		return Launch{}, fmt.Errorf("agents: codex: Home %q must not be under /tmp (CODEX_HOME)", inv.Home)
	}
	policy, err := permissions(a.Name, inv.Permissions, "never", "on-request", "on-failure")
	if err != nil {
		return Launch{}, err
	}
	exe := a.sandboxPath(in.Binary.Path)
	mode := "danger-full-access"
	if inv.OwnSandbox {
		mode = "workspace-write" // system bwrap with --unshare-net plus seccomp
	}
	provider := fmt.Sprintf(`model_providers.gh={name="gh",base_url=%q,env_key="GH_KEY",wire_api="responses",request_max_retries=0,stream_max_retries=0}`,
		strings.TrimRight(inv.ModelURL, "/")+"/v1")
	args := []string{exe, "--no-daemon", "exec", "--json", "--skip-git-repo-check", "--ephemeral",
		"--ignore-user-config", "-C", inv.WorkDir, "-m", inv.Model, "-s", mode,
		"-c", "approval_policy=" + policy, "-c", "model_provider=gh", "-c", provider,
		// No analytics, OTLP metrics, plugin sync (git and HTTPS to public
		// hosts) or endless reconnects.
		"-c", "analytics.enabled=false", "--disable", "plugins",
		"--disable", "unbounded_connection_retries",
		inv.Task}
	env := baseEnv(inv)
	// Codex wants CODEX_HOME to exist already: Home is the one folder the
	// harness makes for the session, so it is CODEX_HOME too.
	env["CODEX_HOME"] = inv.Home
	env["GH_KEY"] = inv.Key
	return Launch{
		Command:    targets.Command{Args: args, Env: env},
		Binds:      a.installBinds(in),
		Executable: exe,
		Facts: map[string]string{
			"agent":           a.Name,
			"agent_version":   a.Version,
			"agent_sha256":    in.Binary.SHA256,
			"permission_mode": "approval_policy=" + policy,
			"own_sandbox":     map[bool]string{true: "on", false: "off"}[inv.OwnSandbox] + " (-s " + mode + ")",
			"as_root":         strconv.FormatBool(inv.Root),
		},
	}, nil
}

// codexLine is the union of `codex exec --json` records we read.
type codexLine struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"`
	Item struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Command  string `json:"command"`
		Output   string `json:"aggregated_output"`
		ExitCode *int   `json:"exit_code"`
		Status   string `json:"status"`
		Text     string `json:"text"`
		Message  string `json:"message"`
	} `json:"item"`
}

// codexParse reads `codex exec --json` JSONL: item.* records for commands,
// messages and errors, and turn.completed / turn.failed at the end.
func codexParse(r io.Reader) Outcome {
	o := Outcome{OwnSandbox: SandboxUnknown}
	jsonLines(r, &o, func(b []byte) error {
		var l codexLine
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		it := l.Item
		switch l.Type {
		case "item.started", "item.updated", "item.completed":
			switch it.Type {
			case "command_execution":
				c := o.call(it.ID)
				if c == nil {
					c = o.addCall(ToolCall{ID: it.ID, Tool: it.Type, Input: it.Command})
				}
				if l.Type == "item.completed" {
					c.ExitCode, c.Output = it.ExitCode, capText(it.Output)
					c.Error = it.Status == "failed" || it.Status == "declined"
					if it.Status == "declined" {
						o.addDenial(Denial{Tool: it.Type, Command: it.Command})
					}
				}
			case "agent_message":
				if l.Type == "item.completed" {
					o.Final = capText(it.Text)
				}
			case "error":
				if l.Type == "item.completed" {
					o.addError(it.Message)
				}
			}
		case "turn.completed":
			o.Done = true
		case "turn.failed":
			o.Done, o.IsError = true, true
			if l.Error != nil {
				o.addError(l.Error.Message)
			}
		case "error":
			o.addError(l.Message)
		}
		return nil
	})
	o.Turns = len(o.ToolCalls)
	if o.Final != "" {
		o.Turns++
	}
	return o
}
