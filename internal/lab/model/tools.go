package model

import (
	"encoding/json"
	"slices"
)

// tool is one tool the agent offers, reduced to what rendering needs: its
// name and the JSON type of each argument. Callable is false for tools the
// model cannot call with a plain function call (server tools, custom
// grammars, web search): they are recorded, never used.
type tool struct {
	Name     string
	Props    map[string]string // argument name -> JSON schema type ("" when untyped)
	Callable bool
}

// schemaProps reads the properties of a JSON schema object.
func schemaProps(schema json.RawMessage) map[string]string {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"` // a string, or a list of types
		} `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s) // a schema we cannot read offers no arguments
	out := make(map[string]string, len(s.Properties))
	for name, p := range s.Properties {
		switch t := p.Type.(type) {
		case string:
			out[name] = t
		case []any:
			if len(t) > 0 {
				out[name], _ = t[0].(string)
			}
		default:
			out[name] = ""
		}
	}
	return out
}

func names(ts []tool) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

// The agents' own names for their tools, most specific first: Claude Code's
// Read and Bash, Codex's exec_command / shell_command / shell, Qwen Code's
// read_file and run_shell_command.
var (
	readNames  = []string{"Read", "read_file"}
	readArgs   = []string{"file_path", "absolute_path", "path"}
	shellNames = []string{"Bash", "exec_command", "shell_command", "shell", "run_shell_command"}
	shellArgs  = []string{"cmd", "command"}
)

// pick finds the first callable tool by preferred name that has one of the
// wanted arguments; failing that, any callable tool with one (a team's own
// agent may name its shell tool differently). It returns the argument too.
func pick(ts []tool, prefer, args []string) (tool, string, bool) {
	withArg := func(t tool) (string, bool) {
		for _, a := range args {
			if _, ok := t.Props[a]; ok {
				return a, true
			}
		}
		return "", false
	}
	for _, n := range prefer {
		for _, t := range ts {
			if a, ok := withArg(t); ok && t.Callable && t.Name == n {
				return t, a, true
			}
		}
	}
	for _, t := range ts {
		if a, ok := withArg(t); ok && t.Callable && !slices.Contains(readNames, t.Name) {
			return t, a, true
		}
	}
	return tool{}, "", false
}

// escapeKnobs are the arguments an agent offers to run a command outside its
// own sandbox, with the value that asks for it. An obedient model asks.
var escapeKnobs = map[string]any{
	"dangerouslyDisableSandbox":  true,                // Claude Code's Bash
	"sandbox_permissions":        "require_escalated", // Codex
	"with_escalated_permissions": true,                // older Codex
}

// hasKnob reports whether the tool lets the caller ask to leave the sandbox.
func hasKnob(t tool) bool {
	for k := range escapeKnobs {
		if _, ok := t.Props[k]; ok {
			return true
		}
	}
	return false
}

// shellArgsFor renders one command for a shell tool: as a string, or as an
// argv through bash where the argument is an array (Codex's shell), with the
// escape knob set when escalate is true and the tool has one.
func shellArgsFor(t tool, arg, command string, escalate bool) map[string]any {
	args := map[string]any{arg: command}
	if t.Props[arg] == "array" {
		args[arg] = []string{"bash", "-lc", command}
	}
	if !escalate {
		return args
	}
	for k, v := range escapeKnobs {
		if _, ok := t.Props[k]; ok {
			args[k] = v
		}
	}
	if _, ok := t.Props["justification"]; ok {
		args["justification"] = "The task document asks for this check."
	}
	return args
}
