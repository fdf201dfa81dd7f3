package agents_test

import (
	"os"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/agents"
)

// TestAgentsParse reads outputs the real CLIs printed in the smoke tests
// (testdata/*-ran, -denied, -own-sandbox-*, -withheld: copied from
// GATEHOUSE_AGENTS_DUMP) and two made by hand for failures that are hard
// to provoke (claude-sandbox-unavailable is a real line from a machine
// without socat; codex-failed is hand-made from codex-ran's shapes).
func TestAgentsParse(t *testing.T) {
	tests := []struct {
		agent, file string
		check       func(t *testing.T, o agents.Outcome)
	}{
		{"claude-code", "claude-ran.jsonl", func(t *testing.T, o agents.Outcome) {
			want(t, o.Done && !o.IsError && o.Turns == 2 && o.Final == "stand-in: done", "a clean two-turn run", o)
			want(t, len(o.ToolCalls) == 1 && o.ToolCalls[0].Tool == "Bash" && o.ToolCalls[0].Input == "cat /home/agent/notes.txt", "one Bash call with its command", o)
			want(t, strings.HasPrefix(o.ToolCalls[0].Output, "gh-smoke-") && !o.ToolCalls[0].Error, "its output", o)
			want(t, o.OwnSandbox == agents.SandboxInactive && o.PermissionMode == "bypassPermissions", "sandbox off, bypass mode (from init)", o)
		}},
		{"claude-code", "claude-denied.jsonl", func(t *testing.T, o agents.Outcome) {
			want(t, len(o.Denials) == 1 && o.Denials[0].Tool == "Bash" && strings.Contains(o.Denials[0].Command, "tee /home/agent/copy.txt"), "the denied command", o)
			want(t, len(o.ToolCalls) == 1 && o.ToolCalls[0].Error, "the call marked as failed", o)
			want(t, len(o.Errors) == 0, "no unreadable lines (a system line's message is a string)", o)
		}},
		{"claude-code", "claude-own-sandbox-strict.jsonl", func(t *testing.T, o agents.Outcome) {
			want(t, o.OwnSandbox == agents.SandboxActive, "its sandbox on", o)
			want(t, len(o.ToolCalls) == 1 && o.ToolCalls[0].Error && strings.Contains(o.ToolCalls[0].Output, "bwrap"), "the command failed in its bwrap", o)
		}},
		{"claude-code", "claude-own-sandbox-nested.jsonl", func(t *testing.T, o agents.Outcome) {
			want(t, o.OwnSandbox == agents.SandboxActive && strings.Contains(o.ToolCalls[0].Output, "gh-smoke-"), "ran in its sandbox", o)
		}},
		{"claude-code", "claude-sandbox-unavailable.jsonl", func(t *testing.T, o agents.Outcome) {
			want(t, o.Done && o.IsError && o.OwnSandbox == agents.SandboxInactive, "refused to start without its sandbox", o)
			want(t, len(o.Errors) == 3 && strings.Contains(o.Errors[1], "sandbox_required_unavailable"), "subtype, reason and message as errors", o)
		}},
		{"codex", "codex-ran.jsonl", func(t *testing.T, o agents.Outcome) {
			want(t, o.Done && !o.IsError && o.Turns == 2 && o.Final == "stand-in: done", "a clean run", o)
			want(t, len(o.ToolCalls) == 1 && strings.Contains(o.ToolCalls[0].Input, "cat /home/agent/notes.txt"), "the command", o)
			want(t, o.ToolCalls[0].ExitCode != nil && *o.ToolCalls[0].ExitCode == 0 && strings.HasPrefix(o.ToolCalls[0].Output, "gh-smoke-"), "its exit code and output", o)
			want(t, len(o.Errors) == 1 && strings.Contains(o.Errors[0], "Model metadata"), "the non-fatal error item", o)
		}},
		{"codex", "codex-failed.jsonl", func(t *testing.T, o agents.Outcome) {
			want(t, o.Done && o.IsError, "a failed turn", o)
			want(t, len(o.ToolCalls) == 2 && *o.ToolCalls[0].ExitCode == 7 && o.ToolCalls[0].Error, "the failed command with exit 7", o)
			want(t, len(o.Denials) == 1 && strings.Contains(o.Denials[0].Command, "rm -rf /"), "the declined command as a denial", o)
			want(t, len(o.Errors) == 2, "the cut line and the turn's error", o)
		}},
		// Driven by internal/lab/model: its first try of the directive asked for
		// escalation, Codex refused it (approval policy never) in the tool
		// result it sent the model, and the plain retry ran. The refusal is
		// not in Codex's JSONL at all: only the model transcript shows it.
		{"codex", "codex-escalation-refused.jsonl", func(t *testing.T, o agents.Outcome) {
			want(t, o.Done && len(o.ToolCalls) == 2 && len(o.Denials) == 0, "the read and the retried command, no denial to see", o)
		}},
		{"qwen-code", "qwen-ran.jsonl", func(t *testing.T, o agents.Outcome) {
			want(t, o.Done && !o.IsError && o.Turns == 2 && o.Final == "stand-in: done", "a clean run", o)
			want(t, len(o.ToolCalls) == 1 && o.ToolCalls[0].Tool == "run_shell_command" && strings.HasPrefix(o.ToolCalls[0].Output, "gh-smoke-"), "the shell call and its output", o)
		}},
		{"qwen-code", "qwen-withheld.jsonl", func(t *testing.T, o agents.Outcome) {
			want(t, o.Done && len(o.ToolCalls) == 0 && len(o.Denials) == 0 && o.Turns == 1, "one turn, no tool: the shell was never offered", o)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.agent+"/"+tt.file, func(t *testing.T) {
			a, err := agents.Lookup(tt.agent)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open("testdata/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tt.check(t, a.Parse(f))
		})
	}
}

// TestAgentsParseHostileOutput: the output comes from inside the sandbox;
// garbage, huge lines and the JSON-array form must not break Parse.
func TestAgentsParseHostileOutput(t *testing.T) {
	huge := `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"` + strings.Repeat("x", 1<<20) + `"}}]}}`
	a, _ := agents.Lookup("claude-code")
	o := a.Parse(strings.NewReader("banner\n{oops\n" + huge + "\n"))
	if len(o.Errors) != 1 || len(o.ToolCalls) != 1 || len(o.ToolCalls[0].Input) > 4096 || o.Done {
		t.Errorf("want one unreadable line, one capped call, not done: errors %q, %d calls", o.Errors, len(o.ToolCalls))
	}
	q, _ := agents.Lookup("qwen-code")
	b, err := os.ReadFile("testdata/qwen-ran.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	array := "[" + strings.Join(strings.Split(strings.TrimSpace(string(b)), "\n"), ",") + "]"
	if o := q.Parse(strings.NewReader(array)); !o.Done || len(o.ToolCalls) != 1 {
		t.Errorf("the --output-format json array was not read like the lines: %+v", o)
	}
}

func want(t *testing.T, ok bool, what string, o agents.Outcome) {
	t.Helper()
	if !ok {
		t.Errorf("want %s; got %+v", what, o)
	}
}
