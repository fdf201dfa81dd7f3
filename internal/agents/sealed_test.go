package agents_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gatehouse-dev/gatehouse/internal/ledger"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/agents"
	"github.com/gatehouse-dev/gatehouse/internal/lab/model"
)

// The smoke tests run each agent CLI in a network namespace of its own
// that holds nothing but loopback: the test binary re-executes itself into
// a fresh namespace (CLONE_NEWNET), checks that no route leaves it (fail
// closed), serves the stand-in model on 127.0.0.1 there, and runs the agent
// under bubblewrap with the binds and command Launch returned. When the
// process exits the namespace is gone; nothing to clean up, and no flag an
// agent gets wrong can reach a real network.

const sealedEnv = "GATEHOUSE_AGENTS_SEALED" // path of a sealedConfig

type sealedConfig struct {
	Agent      string `json:"agent"`
	CacheDir   string `json:"cache_dir"`
	Home       string `json:"home"`     // host folder seen at /home/agent
	WorkDir    string `json:"work_dir"` // in-sandbox folder the agent starts in ("" = home)
	Root       bool   `json:"root"`
	OwnSandbox bool   `json:"own_sandbox"`
	Nested     bool   `json:"nested"`
	Perms      string `json:"permissions"`
	Command    string `json:"command"` // what the stand-in model asks to run
	// Scripted serves the lab's scripted model (internal/lab/model) instead of the
	// stand-in; Document is the planted document it reads first.
	Scripted bool   `json:"scripted"`
	Document string `json:"document"`
	Out      string `json:"out"` // where the sealedResult is written
}

type sealedResult struct {
	Refused  string            `json:"refused,omitempty"` // the namespace was not sealed
	Error    string            `json:"error,omitempty"`
	Argv     []string          `json:"argv"`
	Facts    map[string]string `json:"facts"`
	Exit     int               `json:"exit"`
	Stdout   string            `json:"stdout"`
	Stderr   string            `json:"stderr"`
	Requests []standinRecord   `json:"requests"`
	Model    string            `json:"model"` // the stand-in's address
	// Transcript is what the scripted model recorded (Scripted only).
	Transcript []model.Record `json:"transcript"`
	// Connects are the network addresses the agent's processes tried
	// (connect/sendto/sendmsg, from strace), "" entries never; nil when
	// strace is not installed.
	Connects []string `json:"connects"`
}

const (
	agentHome = "/home/agent"
	docPath   = agentHome + "/notes.txt"
)

func TestMain(m *testing.M) {
	if cfg := os.Getenv(sealedEnv); cfg != "" {
		os.Exit(sealedMain(cfg))
	}
	os.Exit(ledger.RunTests(m))
}

// runSealed runs cfg's agent in a fresh loopback-only namespace.
func runSealed(t *testing.T, cfg sealedConfig) sealedResult {
	t.Helper()
	dir := t.TempDir()
	cfg.Out = filepath.Join(dir, "result.json")
	b, _ := json.Marshal(cfg)
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), sealedEnv+"="+cfgPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("sealed runner: %v\n%s", err, out)
	}
	var res sealedResult
	rb, rerr := os.ReadFile(cfg.Out)
	if rerr != nil || json.Unmarshal(rb, &res) != nil {
		t.Fatalf("sealed runner left no result (%v): %s", rerr, out)
	}
	if res.Refused != "" {
		t.Fatalf("sealed runner refused to run the agent: %s", res.Refused)
	}
	if res.Error != "" {
		t.Fatalf("sealed runner: %s", res.Error)
	}
	return res
}

// sealedMain is the child: it runs inside the new namespace.
func sealedMain(cfgPath string) int {
	var cfg sealedConfig
	b, err := os.ReadFile(cfgPath)
	if err == nil {
		err = json.Unmarshal(b, &cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sealed:", err)
		return 2
	}
	res := sealedRunAgent(cfg)
	out, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(cfg.Out, out, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "sealed:", err)
		return 2
	}
	return 0
}

// sealed says why this namespace is not loopback-only, or "".
func sealed() string {
	// /proc/self/net is this process's namespace; /sys/class/net would be
	// the namespace sysfs was mounted in (the host's).
	dev, err := os.ReadFile("/proc/self/net/dev")
	if err != nil {
		return err.Error()
	}
	for _, l := range strings.Split(string(dev), "\n")[2:] {
		if name, _, ok := strings.Cut(strings.TrimSpace(l), ":"); ok && name != "lo" {
			return "interface " + name + " exists"
		}
	}
	v4, err := os.ReadFile("/proc/self/net/route")
	if err != nil {
		return err.Error()
	}
	if lines := strings.Split(strings.TrimSpace(string(v4)), "\n"); len(lines) > 1 {
		return "an IPv4 route exists: " + lines[1]
	}
	v6, _ := os.ReadFile("/proc/self/net/ipv6_route")
	for _, l := range strings.Split(strings.TrimSpace(string(v6)), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[len(f)-1] != "lo" {
			return "an IPv6 route leaves loopback: " + l
		}
	}
	return ""
}

func sealedRunAgent(cfg sealedConfig) (res sealedResult) {
	if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return sealedResult{Error: fmt.Sprintf("lo up: %v %s", err, out)}
	}
	if why := sealed(); why != "" {
		return sealedResult{Refused: why}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return sealedResult{Error: err.Error()}
	}
	stand := &standin{Command: cfg.Command}
	var handler http.Handler = stand
	var mu sync.Mutex
	var transcript []model.Record
	if cfg.Scripted {
		handler = model.New(model.Options{
			Lookup: func(string) (model.Script, bool) { return model.Script{Session: "smoke", Document: cfg.Document}, true },
			Observe: func(ex model.Exchange) {
				mu.Lock()
				transcript = append(transcript, ex.Record)
				mu.Unlock()
			},
		})
	}
	res.Model = ln.Addr().String()
	srv := &http.Server{Handler: handler}
	go srv.Serve(ln)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		res.Requests = stand.records()
		mu.Lock()
		res.Transcript = transcript
		mu.Unlock()
	}()

	a, err := agents.Lookup(cfg.Agent)
	if err != nil {
		return sealedResult{Error: err.Error()}
	}
	in, err := agents.Cache{Dir: cfg.CacheDir}.Open(a)
	if err != nil {
		return sealedResult{Error: err.Error()}
	}
	l, err := a.Launch(in, agents.Invocation{
		ModelURL: "http://" + ln.Addr().String(), Key: "gh.smoke.k0",
		Task: "Read " + docPath + " and tell me what it says.", TaskFile: agentHome + "/task.txt",
		Home: agentHome, WorkDir: cfg.WorkDir, Root: cfg.Root, OwnSandbox: cfg.OwnSandbox, NestedSandbox: cfg.Nested, Permissions: cfg.Perms, API: a.API,
	})
	if err != nil {
		res.Error = err.Error()
		return res
	}
	for path, data := range l.Files { // what the harness would CopyIn
		host := filepath.Join(cfg.Home, strings.TrimPrefix(path, agentHome+"/"))
		if err := os.MkdirAll(filepath.Dir(host), 0o777); err != nil {
			return sealedResult{Error: err.Error()}
		}
		if err := os.WriteFile(host, data, 0o644); err != nil {
			return sealedResult{Error: err.Error()}
		}
	}
	argv := bwrapArgv(l, cfg)
	trace := filepath.Join(filepath.Dir(cfg.Out), "strace.txt")
	if st, err := exec.LookPath("strace"); err == nil {
		argv = append([]string{st, "-f", "-qq", "-e", "trace=connect,sendto,sendmsg", "-e", "signal=none", "-o", trace}, argv...)
		defer func() { res.Connects = inetAddrs(trace) }()
	}
	res.Argv, res.Facts = l.Command.Args, l.Facts
	// A bound, not a limit the test asserts: a hung agent must not hang CI.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = []string{}
	var stdout, stderr capped
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		res.Exit = ee.ExitCode()
	} else if err != nil {
		res.Error = err.Error()
	}
	return res
}

// bwrapArgv runs the launch the way the bwrap target would: the host's
// /usr and /etc read-only, the agent's binds read-only, a writable home,
// and (normal path) an unprivileged uid.
func bwrapArgv(l agents.Launch, cfg sealedConfig) []string {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		bwrap = "bwrap"
	}
	argv := []string{bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc",
		"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
		"--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
		"--ro-bind", "/etc", "/etc", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
		"--bind", cfg.Home, agentHome, "--chdir", cmp.Or(cfg.WorkDir, agentHome)}
	for _, b := range l.Binds {
		argv = append(argv, "--ro-bind", b.Host, b.Sandbox)
	}
	if !cfg.Root {
		argv = append(argv, "--unshare-user", "--uid", "1000", "--gid", "1000")
	}
	for k, v := range l.Command.Env {
		argv = append(argv, "--setenv", k, v)
	}
	return append(append(argv, "--"), l.Command.Args...)
}
