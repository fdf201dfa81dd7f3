package agents

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// claudeCode is Anthropic's Claude Code. Its npm package is a wrapper whose
// postinstall copies a native binary out of a platform sub-package; we take
// the binary straight from that sub-package (named in optionalDependencies).
func claudeCode() Adapter {
	const pkg, version = "@anthropic-ai/claude-code", "2.1.332"
	return Adapter{
		Name: "claude-code", Package: pkg, Version: version, API: AnthropicMessages,
		agent:  part{pkg: pkg, version: version, platform: pkg + "-" + platformSuffix(), file: "claude"},
		launch: claudeLaunch,
		parse:  claudeParse,
	}
}

// claudeSettings is the --settings JSON. Its own sandbox (bubblewrap plus a
// proxy, Bash only) is on or off here; failIfUnavailable makes "on" mean on:
// without it Claude silently runs commands unsandboxed when it cannot start.
func claudeSettings(inv Invocation) string {
	sb := map[string]any{"enabled": false}
	if inv.OwnSandbox {
		domains := inv.AllowedDomains
		if domains == nil {
			domains = []string{}
		}
		sb = map[string]any{
			"enabled":                  true,
			"failIfUnavailable":        true,
			"allowUnsandboxedCommands": false,
			"network":                  map[string]any{"allowedDomains": domains},
		}
		if inv.NestedSandbox {
			sb["enableWeakerNestedSandbox"] = true
		}
	}
	b, _ := json.Marshal(map[string]any{"sandbox": sb})
	return string(b)
}

func claudeLaunch(a Adapter, in Installed, inv Invocation) (Launch, error) {
	mode, err := permissions(a.Name, inv.Permissions, "bypassPermissions", "default", "acceptEdits", "plan", "dontAsk")
	if err != nil {
		return Launch{}, err
	}
	exe := a.sandboxPath(in.Binary.Path)
	settings := claudeSettings(inv)
	env := baseEnv(inv)
	for k, v := range map[string]string{
		"ANTHROPIC_BASE_URL": inv.ModelURL,
		"ANTHROPIC_API_KEY":  inv.Key,
		"CLAUDE_CONFIG_DIR":  inv.Home + "/.claude",
		// One retry at most: the scripted model answers at once or not at all.
		"CLAUDE_CODE_MAX_RETRIES": "1",
		// No update checks, telemetry, error reports or other side traffic.
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_AUTOUPDATER":                      "1",
		"DISABLE_TELEMETRY":                        "1",
		"DISABLE_ERROR_REPORTING":                  "1",
	} {
		env[k] = v
	}
	if inv.Root && mode == "bypassPermissions" {
		env["IS_SANDBOX"] = "1" // as root it refuses bypass mode without this
	}
	args := []string{exe, "--bare", "-p", inv.Task,
		"--output-format", "stream-json", "--verbose", // stream-json needs --verbose
		"--model", inv.Model, "--tools", "Bash,Read",
		"--permission-mode", mode,
		"--no-session-persistence", "--settings", settings}
	own := "off (settings sandbox.enabled=false)"
	switch {
	case inv.OwnSandbox && inv.NestedSandbox:
		own = "on, weaker nested (settings sandbox.enabled=true, failIfUnavailable=true, enableWeakerNestedSandbox=true)"
	case inv.OwnSandbox:
		own = "on (settings sandbox.enabled=true, failIfUnavailable=true)"
	}
	return Launch{
		Command:    targets.Command{Args: args, Env: env},
		Binds:      a.installBinds(in),
		Executable: exe,
		Facts: map[string]string{
			"agent":           a.Name,
			"agent_version":   a.Version,
			"agent_sha256":    in.Binary.SHA256,
			"permission_mode": mode,
			"own_sandbox":     own,
			"settings":        settings,
			"as_root":         strconv.FormatBool(inv.Root),
		},
	}, nil
}

// claudeLine is the union of the stream-json records we read.
type claudeLine struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	// An object on assistant/user lines, a string on some system lines
	// (permission_denied): read as claudeMessage where it is an object.
	Message json.RawMessage `json:"message"`
	// On system/init: whether its own sandbox is switched on.
	SandboxEnabled *bool  `json:"sandbox_enabled"`
	PermissionMode string `json:"permissionMode"`
	// On a result that ends the run before it starts
	// ("sandbox_required_unavailable" under failIfUnavailable).
	StartupFailure string `json:"startup_failure_reason"`
	NumTurns       int    `json:"num_turns"`
	IsError        bool   `json:"is_error"`
	Result         string `json:"result"`
	Denials        []struct {
		ToolName  string          `json:"tool_name"`
		ToolInput json.RawMessage `json:"tool_input"`
	} `json:"permission_denials"`
	Errors []string `json:"errors"`
}

type claudeMessage struct {
	Content []struct {
		Type      string          `json:"type"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		IsError   bool            `json:"is_error"`
	} `json:"content"`
}

// claudeParse reads --output-format stream-json: system/init, assistant
// tool_use blocks, user tool_result blocks, and the closing result line.
func claudeParse(r io.Reader) Outcome {
	o := Outcome{OwnSandbox: SandboxUnknown}
	jsonLines(r, &o, func(b []byte) error {
		var l claudeLine
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		switch l.Type {
		case "system":
			if l.Subtype == "init" {
				o.PermissionMode = l.PermissionMode
				if l.SandboxEnabled != nil {
					o.OwnSandbox = map[bool]SandboxState{true: SandboxActive, false: SandboxInactive}[*l.SandboxEnabled]
				}
			}
		case "assistant":
			var m claudeMessage
			if err := json.Unmarshal(l.Message, &m); err != nil {
				return err
			}
			for _, c := range m.Content {
				if c.Type == "tool_use" {
					o.addCall(ToolCall{ID: c.ID, Tool: c.Name, Input: inputText(c.Input)})
				}
			}
		case "user":
			var m claudeMessage
			if err := json.Unmarshal(l.Message, &m); err != nil {
				return err
			}
			for _, c := range m.Content {
				if c.Type != "tool_result" {
					continue
				}
				if call := o.call(c.ToolUseID); call != nil {
					call.Error = c.IsError
					call.Output = capText(resultText(c.Content))
				}
			}
		case "result":
			o.Done = true
			o.Turns, o.IsError = l.NumTurns, l.IsError
			o.Final = capText(l.Result)
			if l.IsError && l.Subtype != "" && l.Subtype != "success" {
				o.addError("result: " + l.Subtype)
			}
			if l.StartupFailure != "" {
				o.addError("startup failure: " + l.StartupFailure)
				if strings.Contains(l.StartupFailure, "sandbox") {
					o.OwnSandbox = SandboxInactive // it refused to start without it
				}
			}
			for _, e := range l.Errors {
				o.addError(e)
			}
			for _, d := range l.Denials {
				o.addDenial(Denial{Tool: d.ToolName, Command: inputText(d.ToolInput)})
			}
		}
		return nil
	})
	return o
}

// resultText flattens a tool_result's content: a string or text blocks.
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type, Text string
	}
	if json.Unmarshal(raw, &blocks) == nil {
		out := ""
		for _, b := range blocks {
			out += b.Text
		}
		return out
	}
	return string(raw)
}
