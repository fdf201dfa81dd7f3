package doctor

import (
	"context"
	"fmt"
	"strings"
)

// Pinned versions of the tools `make tools` builds. Keep in step with
// scripts/runsc.sh and scripts/cosign.sh (a test reads them).
const (
	RunscVersion  = "v0.0.0-20260905035102-160fafc42237"
	CosignVersion = "v2.6.5"
)

// table is every check, in the order the report prints them.
func table() []check {
	one := func(needs []string, f func(context.Context, Probes) Check) check {
		return check{needs: needs, run: func(ctx context.Context, p Probes) []Check { return []Check{f(ctx, p)} }}
	}
	return []check{
		one([]string{NeedRun}, root),
		one([]string{NeedBwrap}, userNamespaces),
		one([]string{NeedRun}, netNamespaces),
		one([]string{NeedBwrap, NeedFirejail, NeedSRT, NeedCodex}, cgroup2),
		one([]string{NeedBwrap}, tool("bubblewrap", "bwrap", []string{"--version"}, "apt-get install bubblewrap")),
		one([]string{NeedRun}, tool("nftables", "nft", []string{"--version"}, "apt-get install nftables")),
		one([]string{NeedRun}, tool("iproute2", "ip", []string{"-V"}, "apt-get install iproute2")),
		one([]string{NeedBwrap, NeedDocker, NeedGVisor}, tool("nsenter", "nsenter", []string{"--version"}, "apt-get install util-linux")),
		one([]string{NeedDocker, NeedGVisor}, dockerd),
		one([]string{NeedDocker}, tool("runc", "runc", []string{"--version"}, "apt-get install runc (comes with docker.io)")),
		one([]string{NeedGVisor}, runsc),
		one([]string{NeedFirejail}, tool("firejail", "firejail", []string{"--version"}, "apt-get install firejail")),
		one([]string{NeedCosign}, cosign),
		one([]string{NeedMonitor}, btf),
		one([]string{NeedMonitor}, bpfMonitor),
		one([]string{NeedAudit}, audit),
		{needs: []string{NeedAgents, NeedSRT, NeedCodex}, run: agentChecks},
	}
}

func root(_ context.Context, p Probes) Check {
	c := Check{Name: "root", Status: OK, Found: fmt.Sprintf("euid %d", p.Euid())}
	if p.Euid() != 0 {
		c.Status, c.Fix = Unavailable, "run as root (sudo): a run creates network namespaces, cgroups and nftables rulesets"
	}
	return c
}

func userNamespaces(ctx context.Context, p Probes) Check {
	c := Check{Name: "user-namespaces"}
	if b, err := p.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		c.Status, c.Found, c.Fix = Unavailable, "user.max_user_namespaces = 0", "sysctl -w user.max_user_namespaces=15000"
		return c
	}
	if b, err := p.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" {
		c.Status, c.Found = Unavailable, "kernel.unprivileged_userns_clone = 0"
		c.Fix = "sysctl -w kernel.unprivileged_userns_clone=1 (bubblewrap's normal path runs as an unprivileged user, as real deployments do)"
		return c
	}
	c = unshare(ctx, p, c, "--user", "--map-root-user")
	if c.Status != OK || p.Euid() != 0 {
		return c
	}
	// As root the try above proves little: bubblewrap's normal path runs
	// as the run's own unprivileged uid, so try as one too.
	if _, err := p.LookPath("setpriv"); err != nil {
		c.Status, c.Fix = Missing, "apt-get install util-linux (setpriv)"
		return c
	}
	out, err := p.Output(ctx, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "unshare", "--user", "--map-root-user", "true")
	if err != nil {
		c.Status, c.Found = Unavailable, "as an unprivileged user: "+firstLine(out+" "+err.Error())
		c.Fix = "allow unprivileged user namespaces (sysctl -w kernel.unprivileged_userns_clone=1 where it exists; no security module forbidding them): bubblewrap's normal path runs as an unprivileged user"
		return c
	}
	c.Found += ", also as an unprivileged user"
	return c
}

func netNamespaces(ctx context.Context, p Probes) Check {
	return unshare(ctx, p, Check{Name: "network-namespaces"}, "--net")
}

// unshare tries to make the namespaces for real: a sysctl can say yes
// while a security module says no.
func unshare(ctx context.Context, p Probes, c Check, flags ...string) Check {
	if _, err := p.LookPath("unshare"); err != nil {
		c.Status, c.Fix = Missing, "apt-get install util-linux (unshare, nsenter)"
		return c
	}
	out, err := p.Output(ctx, "unshare", append(flags, "true")...)
	if err != nil {
		c.Status, c.Found = Unavailable, firstLine(out+" "+err.Error())
		c.Fix = "allow namespaces: run as root on a kernel with CONFIG_USER_NS and CONFIG_NET_NS, outside a container that forbids unshare"
		return c
	}
	c.Status, c.Found = OK, "unshare "+strings.Join(flags, " ")+" works"
	return c
}

func cgroup2(_ context.Context, p Probes) Check {
	c := Check{Name: "cgroup-v2"}
	b, err := p.ReadFile("/proc/self/mountinfo")
	if err != nil {
		c.Status, c.Found = Unavailable, err.Error()
		return c
	}
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		if f := strings.Fields(pre); len(f) >= 5 && f[3] == "/" {
			c.Status, c.Found = OK, "cgroup2 mounted at "+f[4]
			return c
		}
	}
	c.Status, c.Fix = Missing, "mount -t cgroup2 none /sys/fs/cgroup (or /sys/fs/cgroup/unified on a hybrid host), or boot with systemd.unified_cgroup_hierarchy=1"
	return c
}

// tool checks a command is on PATH and answers its version flag.
func tool(name, bin string, args []string, install string) func(context.Context, Probes) Check {
	return func(ctx context.Context, p Probes) Check {
		c := Check{Name: name}
		path, err := p.LookPath(bin)
		if err != nil {
			c.Status, c.Fix = Missing, install
			return c
		}
		out, err := p.Output(ctx, path, args...)
		if err != nil {
			c.Status, c.Found, c.Fix = Unavailable, path+": "+firstLine(out+" "+err.Error()), install
			return c
		}
		c.Status, c.Found = OK, firstLine(out)+" ("+path+")"
		return c
	}
}

// dockerd is run by Gatehouse itself inside the lab for each docker run:
// no daemon needs to be running, but the binary must start.
func dockerd(ctx context.Context, p Probes) Check {
	c := tool("dockerd", "dockerd", []string{"--version"}, "apt-get install docker.io")(ctx, p)
	if c.Status == OK {
		c.Found += "; Gatehouse starts its own daemon in the lab for each run"
	}
	return c
}

func runsc(ctx context.Context, p Probes) Check {
	fix := "make tools (scripts/runsc.sh builds runsc " + RunscVersion + " and installs it to /usr/local/bin/runsc)"
	c := tool("runsc", "runsc", []string{"--version"}, fix)(ctx, p)
	if c.Status == OK && !strings.Contains(c.Found, RunscVersion) {
		c.Status, c.Fix = WrongVersion, fix
	}
	return c
}

// cosign is for bundle interop only: Gatehouse signs and verifies by
// itself. `make tools` caches it by version, off PATH.
func cosign(ctx context.Context, p Probes) Check {
	fix := "make tools (scripts/cosign.sh builds cosign " + CosignVersion + " into the cache)"
	cache := p.Getenv("GATEHOUSE_CACHE")
	if cache == "" {
		cache = "/var/cache/gatehouse"
	}
	path := cache + "/cosign-" + CosignVersion + "/cosign"
	if p.Stat(path) != nil {
		var err error
		if path, err = p.LookPath("cosign"); err != nil {
			return Check{Name: "cosign", Status: Missing, Fix: fix}
		}
	}
	out, err := p.Output(ctx, path, "version")
	if err != nil {
		return Check{Name: "cosign", Status: Unavailable, Found: path + ": " + firstLine(out+" "+err.Error()), Fix: fix}
	}
	v := ""
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "GitVersion:"); ok {
			v = strings.TrimSpace(rest)
		}
	}
	if v != CosignVersion {
		return Check{Name: "cosign", Status: WrongVersion, Found: fmt.Sprintf("%s is %q", path, v), Fix: fix}
	}
	return Check{Name: "cosign", Status: OK, Found: v + " (" + path + ")"}
}

func btf(_ context.Context, p Probes) Check {
	const f = "/sys/kernel/btf/vmlinux"
	if p.Stat(f) != nil {
		return Check{Name: "kernel-btf", Status: Missing, Fix: "a kernel built with CONFIG_DEBUG_INFO_BTF=y (the builtin monitor needs " + f + ")"}
	}
	return Check{Name: "kernel-btf", Status: OK, Found: f}
}

// bpfMonitor loads and attaches the builtin monitor and closes it: BPF
// syscall, ring buffer and raw tracepoints, proven the only sure way.
func bpfMonitor(ctx context.Context, p Probes) Check {
	if err := p.Monitor(ctx); err != nil {
		return Check{Name: "bpf-monitor", Status: Unavailable, Found: firstLine(err.Error()),
			Fix: "--monitor builtin needs root and a kernel with CONFIG_BPF_SYSCALL, CONFIG_BPF_EVENTS and BTF; use --alerts or --monitor audit instead"}
	}
	return Check{Name: "bpf-monitor", Status: OK, Found: "loaded, attached and closed"}
}

func audit(_ context.Context, p Probes) Check {
	if err := p.Audit(); err != nil {
		return Check{Name: "audit", Status: Unavailable, Found: firstLine(err.Error()),
			Fix: "--monitor audit needs a kernel with CONFIG_AUDIT, audit not locked (enabled=2) and no other audit daemon running (systemctl stop auditd)"}
	}
	return Check{Name: "audit", Status: OK, Found: "available, no other audit daemon"}
}

// agentChecks is one line per pinned agent and wrapper tool.
func agentChecks(_ context.Context, p Probes) []Check {
	var out []Check
	for _, a := range p.Agents() {
		c := Check{Name: "agent " + a.Name, NeededBy: []string{NeedAgents}}
		switch a.Name {
		case "srt":
			c.NeededBy = []string{NeedSRT}
		case "codex":
			c.NeededBy = []string{NeedAgents, NeedCodex}
		}
		fix := "gatehouse agents install " + a.Name + " (or make tools)"
		switch {
		case a.Err != nil:
			c.Status, c.Found, c.Fix = Missing, firstLine(a.Err.Error()), fix
		case a.Installed != a.Pinned:
			c.Status, c.Found, c.Fix = WrongVersion, "installed "+a.Installed+", pinned "+a.Pinned, fix
		default:
			c.Status, c.Found = OK, a.Installed
		}
		out = append(out, c)
	}
	return out
}
