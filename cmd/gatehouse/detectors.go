package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/features"
	"github.com/gatehouse-dev/gatehouse/internal/alerts"
	"github.com/gatehouse-dev/gatehouse/internal/auditmon"
	"github.com/gatehouse-dev/gatehouse/internal/monitor"
	"github.com/gatehouse-dev/gatehouse/internal/steps"
)

// detectFlags are run's detection sources: Gatehouse's own monitor, the
// output of a team's monitor, and an HTTP receiver for alerts.
type detectFlags struct {
	monitor      string
	alerts       []string
	alertsListen string
	respond      string
}

// alertKinds are the alert formats --alerts accepts.
var alertKinds = []string{"falco", "tetragon", "audit", "ocsf"}

func (d *detectFlags) register(fl *flag.FlagSet) {
	fl.StringVar(&d.monitor, "monitor", "", "detection: builtin (Gatehouse's own eBPF monitor), audit (Linux audit: rules per session by login uid, removed at exit; refused while another audit daemon runs), or both as builtin,audit; scored apart from verdicts, which it never changes")
	fl.Func("alerts", "detection: a monitor's alert output to tail, KIND:PATH with KIND one of "+strings.Join(alertKinds, ", ")+" (repeatable)", func(v string) error {
		d.alerts = append(d.alerts, v)
		return nil
	})
	fl.StringVar(&d.alertsListen, "alerts-listen", "", "detection: HOST:PORT to receive alerts POSTed to (Falco http_output, falcosidekick, CloudEvents, OCSF)")
	fl.StringVar(&d.respond, "respond", "", "response: on a session's first detection, stop (revoke its broker token, cut its link, stop it) or exec:PATH (run your hook with GATEHOUSE_SESSION, _NETNS, _CGROUP, _PIDS); effects measured from outside")
}

// response parses --respond: nil without it. It needs a detection source
// to answer, and a hook that exists and can be run.
func (d detectFlags) response() (*steps.Response, error) {
	if d.respond == "" {
		return nil, nil
	}
	if !d.any() {
		return nil, usagef("run: --respond %s answers detections: name a source too (--monitor builtin, --alerts KIND:PATH or --alerts-listen HOST:PORT)", d.respond)
	}
	if d.respond == "stop" {
		return &steps.Response{Stop: true}, nil
	}
	hook, ok := strings.CutPrefix(d.respond, "exec:")
	if !ok || strings.TrimSpace(hook) == "" {
		return nil, usagef("run: --respond %q: say stop, or exec:PATH for your own hook (e.g. exec:./isolate.sh)", d.respond)
	}
	argv := strings.Fields(hook)
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, usagef("run: --respond %s: %v (give a path to an executable hook)", d.respond, err)
	}
	if abs, err := filepath.Abs(path); err == nil {
		argv[0] = abs
	}
	return &steps.Response{Hook: argv}, nil
}

func (d detectFlags) any() bool { return d.monitor != "" || len(d.alerts) > 0 || d.alertsListen != "" }

// validate checks the detection flags' syntax, before anything starts.
func (d detectFlags) validate() error {
	if _, err := d.monitors(); err != nil {
		return err
	}
	for _, spec := range d.alerts {
		kind, path, ok := strings.Cut(spec, ":")
		if !ok || path == "" || !contains(alertKinds, kind) {
			return usagef("run: --alerts %q: want KIND:PATH with KIND one of %s, e.g. falco:/var/log/falco.jsonl", spec, strings.Join(alertKinds, ", "))
		}
	}
	if d.alertsListen != "" {
		host, port, err := net.SplitHostPort(d.alertsListen)
		n, perr := strconv.Atoi(port)
		if err != nil || perr != nil || n < 1 || n > 65535 {
			return usagef("run: --alerts-listen %q: want HOST:PORT, e.g. 127.0.0.1:2801", d.alertsListen)
		}
		if ip := net.ParseIP(host); host != "localhost" && ip == nil {
			return usagef("run: --alerts-listen %q: give an address, not a name", d.alertsListen)
		}
	}
	return nil
}

// monitorKinds are the monitors --monitor names (comma-separated).
var monitorKinds = []string{"builtin", "audit"}

// monitors lists the monitors --monitor asks for, each once.
func (d detectFlags) monitors() ([]string, error) {
	if d.monitor == "" {
		return nil, nil
	}
	var out []string
	for _, m := range strings.Split(d.monitor, ",") {
		m = strings.TrimSpace(m)
		if !contains(monitorKinds, m) {
			return nil, usagef("run: --monitor %q: the monitors are %s (comma-separated: builtin,audit)", d.monitor, strings.Join(monitorKinds, ", "))
		}
		if contains(out, m) {
			return nil, usagef("run: --monitor %q: %s named twice", d.monitor, m)
		}
		out = append(out, m)
	}
	return out, nil
}

// detectors makes the run's detection sources from the flags: none when
// no flag asks for one. A source that cannot be opened (a missing alert
// file, a non-loopback listen address) is refused (exit 2) rather than
// running without the detection it asked for.
func detectors(d detectFlags) ([]detect.Source, error) {
	if err := d.validate(); err != nil {
		return nil, err
	}
	var srcs []detect.Source
	mons, _ := d.monitors()
	for _, kind := range mons {
		switch kind {
		case "builtin":
			m, err := monitor.New(monitor.Options{})
			if err != nil {
				return nil, fmt.Errorf("run: --monitor builtin: %w", err)
			}
			srcs = append(srcs, builtinMonitor{m})
		case "audit":
			// Refused here, before the run starts anything, when audit is
			// missing or another audit daemon owns it.
			if err := auditmon.Preflight(); err != nil {
				return nil, usagef("run: --monitor audit: %v", err)
			}
			srcs = append(srcs, auditmon.New(0))
		}
	}
	for _, spec := range d.alerts {
		f, err := alerts.Open(spec)
		if err != nil {
			return nil, usagef("run: --alerts %s: %v", spec, err)
		}
		srcs = append(srcs, f)
	}
	if d.alertsListen != "" {
		l, err := alerts.Listen(d.alertsListen)
		if err != nil {
			return nil, usagef("run: --alerts-listen %s: %v", d.alertsListen, err)
		}
		srcs = append(srcs, l)
	}
	return srcs, nil
}

// builtinMonitor lets the harness tell the monitor which sessions to watch:
// it filters in the kernel by cgroup id.
type builtinMonitor struct{ *monitor.Monitor }

func (b builtinMonitor) Register(k detect.SessionKey) error {
	if k.CgroupID == 0 {
		return errNoCgroup
	}
	return b.Monitor.Register(k.CgroupID)
}

func (b builtinMonitor) Unregister(k detect.SessionKey) {
	if k.CgroupID != 0 {
		_ = b.Monitor.Unregister(k.CgroupID)
	}
}

var errNoCgroup = errors.New("the builtin monitor watches sessions by cgroup, and this one has none")

// MarkStopped and LastExit make it a detect.StopWatcher: processes alive
// after the stop are reported, and when they were gone is the kernel's.
func (b builtinMonitor) MarkStopped(k detect.SessionKey, at time.Time) error {
	if k.CgroupID == 0 {
		return errNoCgroup
	}
	return b.Monitor.MarkStopped(k.CgroupID, at)
}

func (b builtinMonitor) LastExit(ctx context.Context, k detect.SessionKey) (detect.Exits, error) {
	if k.CgroupID == 0 {
		return detect.Exits{}, errNoCgroup
	}
	return b.Monitor.LastExit(ctx, k.CgroupID)
}

var (
	_ detect.Registrar   = builtinMonitor{}
	_ detect.StopWatcher = builtinMonitor{}
)

// detectionNote is what the run prints about detection before it starts.
func detectionNote(srcs []detect.Source) string {
	if len(srcs) == 0 {
		return "detection: not measured (no --monitor or --alerts)"
	}
	var names []string
	for _, s := range srcs {
		names = append(names, s.Name())
	}
	return fmt.Sprintf("detection: %s (scored apart from verdicts)", strings.Join(names, ", "))
}

// detectionRequest parses gate's --require-detection and
// --max-detection-latency: known gates only, and a latency bound only
// with gates to bound.
func detectionRequest(list string, max time.Duration) ([]string, time.Duration, error) {
	known, err := features.Gates(features.FS)
	if err != nil {
		return nil, 0, err
	}
	var gates []string
	for _, g := range strings.Split(list, ",") {
		if g = strings.TrimSpace(g); g == "" {
			continue
		}
		if !contains(known, g) {
			return nil, 0, usagef("gate: --require-detection: unknown gate %q; known gates: %s", g, strings.Join(known, ", "))
		}
		gates = append(gates, g)
	}
	switch {
	case max < 0:
		return nil, 0, usagef("gate: --max-detection-latency %s: must not be negative", max)
	case max > 0 && len(gates) == 0:
		return nil, 0, usagef("gate: --max-detection-latency needs --require-detection GATES")
	}
	return gates, max, nil
}
