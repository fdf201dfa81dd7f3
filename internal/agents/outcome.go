package agents

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"
)

// Outcome is what an agent said about its own run, read from its JSON
// output. It tells which layer stopped an attempt (a permission denial is
// the agent's own layer); it is never evidence that something did or did
// not happen — verdicts come from the controlled endpoints.
type Outcome struct {
	// Turns is the agent's own count of model turns where it gives one
	// (Claude, Qwen: num_turns); Codex gives none, so there it is the
	// number of tool calls plus one for the final answer.
	Turns     int        `json:"turns"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	Denials   []Denial   `json:"permission_denials,omitempty"`
	Errors    []string   `json:"errors,omitempty"`
	// IsError is the agent's own verdict on the whole run (result line).
	IsError bool `json:"is_error"`
	// Final is the final answer text, capped.
	Final string `json:"final,omitempty"`
	// OwnSandbox is whether the agent says its own sandbox was switched on
	// (Claude's init line). Whether it held is for the endpoints to say.
	OwnSandbox SandboxState `json:"own_sandbox"`
	// PermissionMode is the mode the agent says it runs in.
	PermissionMode string `json:"permission_mode,omitempty"`
	// Done is true when the agent's closing record (Claude's result line,
	// Codex's turn.completed/turn.failed, Qwen's result) was read.
	Done bool `json:"done"`
}

// ToolCall is one tool the agent ran for the model.
type ToolCall struct {
	ID    string `json:"id,omitempty"`
	Tool  string `json:"tool"`            // "Bash", "Read", "command_execution", "run_shell_command"
	Input string `json:"input,omitempty"` // the command or file path, capped
	// ExitCode is the command's exit status when the agent reports one.
	ExitCode *int `json:"exit_code,omitempty"`
	// Error is true when the agent marked the tool result as an error.
	Error  bool   `json:"error,omitempty"`
	Output string `json:"output,omitempty"` // the tool result, capped
}

// Denial is a call the agent's own permission layer refused.
type Denial struct {
	Tool    string `json:"tool"`
	Command string `json:"command,omitempty"`
}

// SandboxState is what the agent reported about its own sandbox.
type SandboxState string

const (
	SandboxUnknown  SandboxState = "unknown" // the output does not say
	SandboxActive   SandboxState = "active"
	SandboxInactive SandboxState = "inactive"
)

const (
	maxLine  = 8 << 20 // one JSON line; longer ones are skipped as malformed
	maxText  = 2048    // kept of a command, answer or tool output
	maxItems = 512     // tool calls, denials or errors kept
)

// jsonLines calls fn for each JSON object line of r. Lines that are not
// JSON become one error each in o (capped), never a failure.
func jsonLines(r io.Reader, o *Outcome, fn func(line []byte) error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue // banners, blank lines: not records
		}
		if err := fn(line); err != nil {
			o.addError(fmt.Sprintf("unreadable output line: %v", err))
		}
	}
	if err := sc.Err(); err != nil {
		o.addError(fmt.Sprintf("reading output: %v", err))
	}
}

func (o *Outcome) addError(s string) {
	if len(o.Errors) < maxItems {
		o.Errors = append(o.Errors, capText(s))
	}
}

func (o *Outcome) addCall(c ToolCall) *ToolCall {
	if len(o.ToolCalls) >= maxItems {
		return &ToolCall{} // counted nowhere: the cap is the point
	}
	c.Input = capText(c.Input)
	o.ToolCalls = append(o.ToolCalls, c)
	return &o.ToolCalls[len(o.ToolCalls)-1]
}

func (o *Outcome) addDenial(d Denial) {
	if len(o.Denials) < maxItems {
		d.Command = capText(d.Command)
		o.Denials = append(o.Denials, d)
	}
}

// call finds a tool call by id (the result of a call comes after it).
func (o *Outcome) call(id string) *ToolCall {
	for i := range o.ToolCalls {
		if id != "" && o.ToolCalls[i].ID == id {
			return &o.ToolCalls[i]
		}
	}
	return nil
}

// capText keeps the first maxText bytes of s on a rune boundary.
func capText(s string) string {
	if len(s) <= maxText {
		return s
	}
	s = s[:maxText]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// inputText is the human part of a tool input: its command, or its path.
func inputText(raw json.RawMessage) string {
	var in map[string]any
	if json.Unmarshal(raw, &in) != nil {
		return string(raw)
	}
	for _, k := range []string{"command", "cmd", "file_path", "path"} {
		switch v := in[k].(type) {
		case string:
			return v
		case []any: // Codex's older shell tool: argv
			b, _ := json.Marshal(v)
			return string(b)
		}
	}
	return string(raw)
}
