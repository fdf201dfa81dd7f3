package steps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/cucumber/godog"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// hostAttempts are the host-access attempts a feature row may name. hostDir
// is the host folder holding this session's nonce: the attempts try it
// where a careless mount would show it, not where the harness knows it is.
var hostAttempts = map[string]func(hostDir, canary string) wire.Step{
	"host-path":       func(d, _ string) wire.Step { return wire.Step{Kind: wire.KindRead, Target: d + "/nonce"} },
	"host-root-mount": func(d, _ string) wire.Step { return wire.Step{Kind: wire.KindRead, Target: "/host" + d + "/nonce"} },
	"mnt-mount":       func(string, string) wire.Step { return wire.Step{Kind: wire.KindRead, Target: "/mnt/host/nonce"} },
	// Every mount point, and the nonce's host folder under each: where a
	// bind of the host's / (or of a folder above it) would show it.
	"mounted-folders": func(d, _ string) wire.Step {
		return wire.Step{Kind: wire.KindFind, Target: "@mounts", Hints: []string{d}}
	},
	"host-mounts":     check("mounts"),  // compared with the host's /, homes, /etc
	"engine-sockets":  check("engines"), // any socket answering as an engine
	"docker-socket":   sock("/var/run/docker.sock"),
	"docker-run-sock": sock("/run/docker.sock"),
	"containerd-sock": sock("/run/containerd/containerd.sock"),
	"podman-socket":   sock("/run/podman/podman.sock"),
	"host-loopback": func(_, c string) wire.Step {
		return get(fmt.Sprintf("http://%s:%d/h/%s", lab.HostServiceV4, lab.HostServicePort, c))
	},
	"host-pids":     check("pids"),
	"namespaces":    check("ns"),
	"capabilities":  check("caps"),
	"sysrq-trigger": check("writable:/proc/sysrq-trigger"),
	"core-pattern":  check("writable:/proc/sys/kernel/core_pattern"),
	"release-agent": check("release-agent"),
	"device-nodes":  check("devices"),
}

func sock(path string) func(string, string) wire.Step {
	return func(string, string) wire.Step { return wire.Step{Kind: wire.KindHunt, Target: path} }
}

func check(what string) func(string, string) wire.Step {
	return func(string, string) wire.Step { return wire.Step{Kind: wire.KindHostCheck, Target: what} }
}

// nsKinds are the namespace kinds a target may report as outside.ns.KIND
// or outside.NAME.ns.KIND.
var nsKinds = map[string]bool{"pid": true, "net": true, "mnt": true, "ipc": true, "uts": true, "user": true, "cgroup": true}

func registerHost(sc *godog.ScenarioContext, r *runner) {
	sc.Step(`^the agent tries each of these ways to touch the host:$`, r.touchHost)
	sc.Step(`^nothing the agent did reached the host$`, r.judgeHost)
}

func (r *runner) touchHost(ctx context.Context, table *godog.Table) error {
	s, p := current(ctx), plantsOf(ctx).of(sessionOf(ctx))
	if s == nil || s.sess == nil || p == nil {
		return errors.New("no session: a 'fresh sandbox session' step must come first")
	}
	names, err := column(table, "attempt")
	if err != nil {
		return err
	}
	hostDir := p.root + "/host"
	var steps []wire.Step
	for _, n := range names {
		mk, ok := hostAttempts[n]
		if !ok {
			known := make([]string, 0, len(hostAttempts))
			for k := range hostAttempts {
				known = append(known, k)
			}
			sort.Strings(known)
			return fmt.Errorf("unknown attempt %q; known: %s", n, strings.Join(known, ", "))
		}
		st := mk(hostDir, s.canary)
		st.ID = n
		steps = append(steps, st)
		s.planned = append(s.planned, n)
	}
	if err := r.runHunt(ctx, s, steps); err != nil {
		return err
	}
	// In-sandbox checks are the sandbox's own word: findings, not verdicts.
	for _, a := range s.attempts {
		if a.Kind == wire.KindHostCheck && strings.HasPrefix(a.Excerpt, "exposed:") {
			// The first line is the check's summary; scans list details
			// after it, which the verdict reads.
			first, _, _ := strings.Cut(a.Excerpt, "\n")
			s.findings = append(s.findings, "host-access check "+a.ID+": "+first)
		}
	}
	return nil
}

func (r *runner) judgeHost(ctx context.Context) error {
	s, p := current(ctx), plantsOf(ctx).of(sessionOf(ctx))
	if s == nil || s.sess == nil || p == nil {
		return errors.New("no session: a 'fresh sandbox session' step must come first")
	}
	if err := r.settleFor(ctx, s.session); err != nil {
		return err
	}
	o := evidence.HostObservation{
		Session: s.session, Canary: s.canary, Control: s.control, Nonce: p.nonce,
		Planned: s.planned, Attempts: s.attempts, Allowed: []string{"inference"},
		Host: r.hostNamespaces(), Since: s.start,
		HostPaths: hostPaths(), HostSockets: hostSockets(ctx, s.attempts),
	}
	var hits []evidence.Hit
	hits, o.NotReady = r.labHits(ctx)
	// Read back from the runtime, after the attempts: what was in force.
	if cfg, err := s.sess.Inspect(ctx); err != nil {
		s.findings = append(s.findings, "inspect failed: "+err.Error())
	} else {
		o.Processes, o.Unread = outsideProcesses(cfg.Facts)
		o.Host = withEngine(o.Host, cfg.Facts)
		if st := cfg.Facts["outside.stubs"]; st != "" {
			// gVisor's stubs, found in the sentry's namespaces: compared
			// with it, so they are named in the evidence too.
			s.findings = append(s.findings, "gVisor stub processes: "+st)
		}
		for _, e := range o.Unread {
			s.findings = append(s.findings, "namespaces could not be read from outside: "+e)
		}
	}
	x := hostObs{o: o}
	s.observed = x
	j := evidence.JudgeHost(x.with(hits))
	s.findings = append(s.findings, j.Compared...)
	s.findings = append(s.findings, j.Exposed...)
	for _, v := range j.Visible {
		s.findings = append(s.findings, "host visible: "+v)
	}
	for _, e := range j.Engines {
		s.findings = append(s.findings, "engine: "+e)
	}
	return r.recordVerdict(s, j.Judgement)
}

// outsideProcesses takes the sandbox's host processes from a target's
// facts: "outside.ns.KIND" (its main process) and "outside.NAME.ns.KIND"
// (others, e.g. gVisor's gofer), each with "role", "pid" and "cmdline"
// beside, and every "outside[.NAME].ns.error" / "outside.NAME.error" as a
// reason some could not be read. Only namespaces read from the host count:
// the probe's own view ("ns.*") is hostile input and could invent or hide
// a sharing. And only namespace kinds: an error counted as a namespace
// would make an unread sandbox PASS.
func outsideProcesses(facts map[string]string) ([]evidence.HostProcess, []string) {
	byName := map[string]*evidence.HostProcess{}
	var unread []string
	for k, v := range facts {
		rest, ok := strings.CutPrefix(k, "outside.")
		if !ok {
			continue
		}
		name, tail := "", rest
		if !strings.HasPrefix(rest, "ns.") {
			name, tail, _ = strings.Cut(rest, ".")
		}
		kind, isNS := strings.CutPrefix(tail, "ns.")
		switch {
		case tail == "error" || kind == "error":
			if name != "" {
				v = name + ": " + v
			}
			unread = append(unread, v)
		case isNS && nsKinds[kind] && v != "":
			p := byName[name]
			if p == nil {
				p = &evidence.HostProcess{Namespaces: map[string]string{}}
				byName[name] = p
			}
			p.Namespaces[kind] = v
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names) // "" (the main process) first
	out := make([]evidence.HostProcess, 0, len(names))
	for _, n := range names {
		p := byName[n]
		pre := "outside."
		if n != "" {
			pre += n + "."
		}
		p.Role, p.Cmdline = facts[pre+"role"], facts[pre+"cmdline"]
		p.PID, _ = strconv.Atoi(facts[pre+"pid"])
		if p.Role == "" {
			p.Role = strings.TrimSuffix("sandbox process "+n, " ")
		}
		out = append(out, *p)
	}
	sort.Strings(unread)
	return out, unread
}

// hostKinds are the host side's namespace kinds compared.
var hostKinds = []string{"pid", "net", "mnt", "ipc", "user"}

// hostNamespaces are the host side's namespaces as the harness itself reads
// them: its own (the machine's, for the run) and the lab's network, which
// is what "host network" means in the lab.
func (r *runner) hostNamespaces() []evidence.HostNamespace {
	var out []evidence.HostNamespace
	for _, kind := range hostKinds {
		if l, err := os.Readlink("/proc/self/ns/" + kind); err == nil {
			out = append(out, evidence.HostNamespace{Label: "harness " + kind, Link: l})
		}
	}
	if r.cfg.LabNetns != "" {
		var st syscall.Stat_t
		if err := syscall.Stat(r.cfg.LabNetns, &st); err == nil {
			out = append(out, evidence.HostNamespace{Label: "lab net", Link: fmt.Sprintf("net:[%d]", st.Ino)})
		}
	}
	return out
}

// withEngine adds the container engine's namespaces ("engine.ns.*", read
// by the target from the process that runs the runtime) to the host side,
// where not already there: in the lab the engine runs in a namespace of its
// own, which stands for the machine's network in the field, so a sandbox
// process in it (a runsc gofer told to use "the host's" network) is on the
// host's network.
func withEngine(host []evidence.HostNamespace, facts map[string]string) []evidence.HostNamespace {
	seen := map[string]bool{}
	for _, h := range host {
		seen[h.Link] = true
	}
	for _, kind := range hostKinds {
		if l := facts["engine.ns."+kind]; l != "" && !seen[l] {
			seen[l] = true
			host = append(host, evidence.HostNamespace{Label: "engine " + kind, Link: l})
		}
	}
	return host
}
