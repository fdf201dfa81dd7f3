package agents

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// execAgent is a team's own agent: any executable on the host, bound
// read-only into the sandbox, that reads its task from GATEHOUSE_TASK_FILE
// and talks to GATEHOUSE_MODEL_URL with GATEHOUSE_MODEL_KEY in the wire
// format GATEHOUSE_MODEL_API names. It needs no install.
func execAgent(cmd string) (Adapter, error) {
	if cmd == "" {
		return Adapter{}, fmt.Errorf("agents: exec: needs a command path (exec:./my-agent.sh)")
	}
	abs, err := filepath.Abs(cmd)
	if err != nil {
		return Adapter{}, fmt.Errorf("agents: exec: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return Adapter{}, fmt.Errorf("agents: exec: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return Adapter{}, fmt.Errorf("agents: exec: %s is not an executable file", abs)
	}
	return Adapter{Name: "exec:" + abs, launch: execLaunch, parse: execParse}, nil
}

// execInstalled describes the command where it is, with its digest now.
func (a Adapter) execInstalled() (Installed, error) {
	path := a.Name[len("exec:"):]
	f, err := digestPath(path)
	if err != nil {
		return Installed{}, fmt.Errorf("agents: %s: %w", a.Name, err)
	}
	f.Path = filepath.Base(path)
	return Installed{Schema: manifestSchema, Agent: a.Name, Dir: filepath.Dir(path), Binary: f}, nil
}

func execLaunch(a Adapter, in Installed, inv Invocation) (Launch, error) {
	switch inv.API {
	case AnthropicMessages, OpenAIResponses, OpenAIChat:
	default:
		return Launch{}, fmt.Errorf("agents: %s: say which API it speaks (anthropic-messages, openai-responses or openai-chat), got %q", a.Name, inv.API)
	}
	if inv.TaskFile == "" {
		return Launch{}, fmt.Errorf("agents: %s: the exec contract needs a TaskFile", a.Name)
	}
	// Only the file is bound, not its folder: a team's checkout may hold
	// secrets next to its agent.
	host := filepath.Join(in.Dir, in.Binary.Path)
	exe := filepath.Join(Root, "exec", in.Binary.Path)
	env := baseEnv(inv)
	for k, v := range map[string]string{
		"GATEHOUSE_MODEL_URL": inv.ModelURL,
		"GATEHOUSE_MODEL_KEY": inv.Key,
		"GATEHOUSE_MODEL_API": string(inv.API),
		"GATEHOUSE_TASK_FILE": inv.TaskFile,
		"GATEHOUSE_MODEL":     inv.Model,
		"GATEHOUSE_WORK_DIR":  inv.WorkDir,
	} {
		env[k] = v
	}
	return Launch{
		Command:    targets.Command{Args: []string{exe}, Env: env},
		Binds:      []Bind{{Host: host, Sandbox: exe}},
		Executable: exe,
		Files:      map[string][]byte{inv.TaskFile: []byte(inv.Task)},
		Facts: map[string]string{
			"agent":        a.Name,
			"agent_sha256": in.Binary.SHA256,
			"api":          string(inv.API),
			"own_sandbox":  "not managed by gatehouse (exec agent)",
		},
	}, nil
}

// execParse keeps a team agent's output as its final answer: the contract
// asks for no format, so nothing in it is interpreted (and Done stays
// false: there is no closing record to read).
func execParse(r io.Reader) Outcome {
	var b bytes.Buffer
	_, _ = io.Copy(&b, io.LimitReader(r, maxText))
	return Outcome{Final: capText(b.String()), OwnSandbox: SandboxUnknown}
}

// digestPath hashes a team's own agent where it is (its path is the team's
// configuration, not something a registry or a sandbox wrote).
func digestPath(file string) (File, error) {
	d, err := os.Open(file)
	if err != nil {
		return File{}, err
	}
	defer d.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(d, maxInstalledFile+1))
	if err != nil {
		return File{}, err
	}
	if n > maxInstalledFile {
		return File{}, fmt.Errorf("%s: more than %d bytes", file, maxInstalledFile)
	}
	return File{Path: file, SHA256: hex.EncodeToString(h.Sum(nil)), Size: n}, nil
}
