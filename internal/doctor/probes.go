package doctor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/agents"
	"github.com/gatehouse-dev/gatehouse/internal/auditmon"
	"github.com/gatehouse-dev/gatehouse/internal/hostenv"
	"github.com/gatehouse-dev/gatehouse/internal/monitor"
)

// Probes are how the checks look at the machine; tests give fakes.
type Probes struct {
	Euid     func() int
	ReadFile func(name string) ([]byte, error)
	Stat     func(name string) error
	LookPath func(file string) (string, error)
	// Output runs a command and returns its combined output.
	Output func(ctx context.Context, name string, args ...string) (string, error)
	// Monitor loads and attaches the builtin monitor, then closes it.
	Monitor func(ctx context.Context) error
	// Audit says whether the audit source could start (auditmon.Preflight).
	Audit  func() error
	Agents func() []Agent
	Getenv func(string) string
}

// Agent is one pinned agent or wrapper tool and what the cache holds.
type Agent struct {
	Name, Pinned, Installed string
	Err                     error // not installed, or its install is broken
}

// System is this machine.
func System() Probes {
	return Probes{
		Euid:     os.Geteuid,
		ReadFile: os.ReadFile,
		Stat:     func(name string) error { _, err := os.Stat(name); return err },
		LookPath: exec.LookPath,
		Output: func(ctx context.Context, name string, args ...string) (string, error) {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			out, err := hostenv.Command(ctx, name, args...).CombinedOutput()
			return string(out), err
		},
		Monitor: loadMonitor,
		Audit:   auditmon.Preflight,
		Agents:  cachedAgents,
		Getenv:  os.Getenv,
	}
}

func loadMonitor(ctx context.Context) error {
	m, err := monitor.New(monitor.Options{})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := m.Start(ctx); err != nil {
		return errors.Join(err, m.Close())
	}
	return m.Close()
}

func cachedAgents() []Agent {
	cache := agents.DefaultCache(os.Getenv)
	var out []Agent
	add := func(a agents.Adapter, err error) {
		if err != nil {
			out = append(out, Agent{Name: a.Name, Err: err})
			return
		}
		row := Agent{Name: a.Name, Pinned: a.Version}
		in, err := cache.Open(a)
		if err != nil {
			row.Err = err
		} else {
			row.Installed = in.Version
		}
		out = append(out, row)
	}
	for _, n := range agents.Names() {
		add(agents.Lookup(n))
	}
	for _, n := range agents.Tools() {
		add(agents.Tool(n))
	}
	return out
}
