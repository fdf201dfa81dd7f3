package agents_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/agents"
)

// smokeCase is one CLI in one mode and what must come of it.
type smokeCase struct {
	name       string
	agent      string
	root       bool
	ownSandbox bool
	nested     bool   // Claude: enableWeakerNestedSandbox
	workDir    string // in-sandbox start folder ("" = home)
	perms      string // Invocation.Permissions ("" = run everything unasked)
	// denied: the agent's own permission layer must refuse the command,
	// and Parse must report that denial with the command. withheld: the
	// mode takes the shell tool away instead (nothing to deny).
	denied, withheld bool
	// ran: the command must run and its output reach the model. Otherwise
	// it must NOT reach the model (the agent's own sandbox cannot work in
	// ours, and "on" must then mean nothing runs, never "runs outside").
	ran bool
}

// TestAgentsSmoke runs every installed CLI headless against the stand-in
// model, sealed in a loopback-only namespace, and checks both sides: the
// model received the tool result of the cat it asked for (the CLI really
// ran the tool), and Parse read the call and the final answer from the
// CLI's own JSON output.
func TestAgentsSmoke(t *testing.T) {
	_, socatErr := exec.LookPath("socat") // Claude's sandbox needs it
	cases := []smokeCase{
		{name: "claude-code as an unprivileged user", agent: "claude-code", ran: true},
		{name: "claude-code as root", agent: "claude-code", root: true, ran: true},
		// Inside bwrap, /proc is partly covered and Claude's own bwrap
		// cannot mount a new one: strict, the command fails and never
		// runs outside its sandbox (without socat it refuses to start).
		{name: "claude-code with its own strict sandbox runs nothing", agent: "claude-code", ownSandbox: true, ran: false},
		// Weaker nested mode runs it in its sandbox; without socat Claude
		// refuses to start (failIfUnavailable), which must show as such.
		{name: "claude-code with its own nested sandbox", agent: "claude-code", ownSandbox: true, nested: true, ran: socatErr == nil},
		{name: "claude-code in default mode denies a write", agent: "claude-code", perms: "default", denied: true},
		{name: "codex as an unprivileged user", agent: "codex", ran: true},
		{name: "codex with its own sandbox", agent: "codex", ownSandbox: true, ran: true},
		{name: "qwen-code as an unprivileged user", agent: "qwen-code", ran: true},
		{name: "qwen-code in default mode withholds its shell", agent: "qwen-code", perms: "default", withheld: true},
		// Qwen's own sandbox (bwrap, probed at start) cannot set up inside
		// ours either: it refuses to start rather than run on the host.
		{name: "qwen-code with its own sandbox refuses to start", agent: "qwen-code", ownSandbox: true, workDir: agentHome + "/work", ran: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { smoke(t, tc) })
	}
}

func smoke(t *testing.T, tc smokeCase) {
	needSealable(t)
	a, err := agents.Lookup(tc.agent)
	if err != nil {
		t.Fatal(err)
	}
	cache := agents.DefaultCache(os.Getenv)
	if _, err := cache.Open(a); err != nil {
		t.Skipf("%s not installed (gatehouse agents install %s; make tools does it): %v", tc.agent, tc.agent, err)
	}
	home := agentHomeDir(t)
	nonce := "gh-smoke-" + strings.ReplaceAll(t.Name(), "/", "-")
	if err := os.WriteFile(home+"/notes.txt", []byte(nonce+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(home+"/work", 0o777); err != nil {
		t.Fatal(err)
	}
	// A read: Claude runs read-only commands unasked in every mode. The
	// denial cases ask for a write, which needs permission.
	command := "cat " + docPath
	if tc.denied || tc.withheld {
		command += " | tee " + agentHome + "/copy.txt"
	}
	res := runSealed(t, sealedConfig{Command: command, Agent: tc.agent, CacheDir: cache.Dir, Home: home, WorkDir: tc.workDir,
		Root: tc.root, OwnSandbox: tc.ownSandbox, Nested: tc.nested, Perms: tc.perms})
	t.Logf("argv: %q\nfacts: %v\nexit %d\nrequests: %+v\nconnects: %q\nstderr: %s", res.Argv, res.Facts, res.Exit, res.Requests, res.Connects, res.Stderr)
	if dump := os.Getenv("GATEHOUSE_AGENTS_DUMP"); dump != "" { // to refresh testdata by hand
		os.WriteFile(dump+"/"+strings.ReplaceAll(t.Name(), "/", "_")+".out", []byte(res.Stdout), 0o644)
	}
	out := a.Parse(strings.NewReader(res.Stdout))
	t.Logf("outcome: %+v", out)

	// With the env Launch sets, nothing but the model may be contacted
	// (no update check, telemetry, DNS): strace saw every attempt.
	if res.Connects == nil {
		t.Log("strace not installed: the agent's background traffic was not checked")
	}
	for _, c := range res.Connects {
		if c != res.Model {
			t.Errorf("the agent tried to reach %s (the model is %s): background traffic not silenced", c, res.Model)
		}
	}
	reached := false
	for _, r := range res.Requests {
		reached = reached || strings.Contains(r.ToolResult, nonce)
	}
	if tc.denied || tc.withheld {
		if _, err := os.Stat(home + "/copy.txt"); reached || err == nil {
			t.Fatalf("the command ran although the permission mode %q should refuse it", tc.perms)
		}
	}
	if tc.denied && (len(out.Denials) == 0 || !strings.Contains(out.Denials[0].Command, command)) {
		t.Fatalf("Parse found no denial of %q: %+v", command, out)
	}
	if tc.withheld {
		for _, r := range res.Requests {
			if r.Call != "" {
				t.Errorf("the shell tool was offered in mode %q: %+v", tc.perms, r)
			}
		}
	}
	if tc.denied || tc.withheld {
		return
	}
	if !tc.ran {
		if reached {
			t.Fatalf("the command ran and its output reached the model, though the agent's own sandbox cannot work here")
		}
		failedCall := len(out.ToolCalls) > 0 && out.ToolCalls[0].Error
		if !out.IsError && res.Exit == 0 && !failedCall {
			t.Errorf("nothing ran, yet neither the exit code nor the output shows a failed run or a failed tool call: %+v", out)
		}
		return
	}
	called := false
	for _, r := range res.Requests {
		called = called || strings.Contains(r.Call, "cat "+docPath)
	}
	if !called || !reached {
		t.Fatalf("cat call sent: %v, its output returned to the model: %v (want both: the CLI must run the tool)\nstdout: %s", called, reached, res.Stdout)
	}
	if !out.Done || out.IsError || res.Exit != 0 {
		t.Errorf("run not finished cleanly: done=%v is_error=%v exit=%d errors=%q", out.Done, out.IsError, res.Exit, out.Errors)
	}
	if len(out.ToolCalls) == 0 || !strings.Contains(out.ToolCalls[0].Input, "cat "+docPath) || !strings.Contains(out.ToolCalls[0].Output, nonce) {
		t.Fatalf("Parse did not read the cat call and its output: %+v\nstdout: %s", out.ToolCalls, res.Stdout)
	}
	if !strings.Contains(out.Final, "stand-in: done") || out.Turns < 2 {
		t.Errorf("final answer %q after %d turns, want the stand-in's answer after at least 2", out.Final, out.Turns)
	}
	if len(out.Denials) != 0 {
		t.Errorf("denials where everything is allowed: %+v", out.Denials)
	}
	if tc.agent == "claude-code" && (out.OwnSandbox == agents.SandboxActive) != tc.ownSandbox {
		t.Errorf("Claude says its own sandbox is %s, asked for on=%v", out.OwnSandbox, tc.ownSandbox)
	}
}

// needSealable skips where a namespace with bubblewrap cannot be made.
func needSealable(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a network namespace for the agent")
	}
	for _, tool := range []string{"bwrap", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
}

// agentHomeDir is the host folder bound at /home/agent, writable by the
// agent's uid.
func agentHomeDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "gh-agents-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}
