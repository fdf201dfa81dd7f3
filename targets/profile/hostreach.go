package profile

import (
	"fmt"
	"slices"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// HostAccess is one way a sandbox of the profile reaches the host that
// starts it: the harness's processes (their environment and memory), its
// files (a signing key, its binaries, its own folders) or the services it
// runs. Field is where the profile says it.
type HostAccess struct {
	Field    string `json:"field"`
	Why      string `json:"why"`
	Writable bool   `json:"writable,omitempty"` // Exposes: the guest may write there
}

func (a HostAccess) String() string { return a.Field + ": " + a.Why }

// harnessDirs are where the harness keeps what no sandbox may touch: its
// working folders and ledger, and the tools it runs as root.
var harnessDirs = []string{"/run/gatehouse", "/var/cache/gatehouse"}

// escapeCaps are capabilities that, in the host's user namespace, take the
// host from inside a container on their own.
var escapeCaps = []struct{ name, why string }{
	{"SYS_ADMIN", "mounts, and with them the host's cgroup release_agent and block devices"},
	{"DAC_READ_SEARCH", "open_by_handle_at opens any file of the host's file system by its handle"},
	{"SYS_MODULE", "loads kernel modules"},
	{"SYS_RAWIO", "raw I/O ports and /dev/mem"},
	{"BPF", "BPF programs that read kernel and process memory"},
	{"PERFMON", "perf and BPF tracing of every process"},
}

// HostReach lists every way the profile's guest, root on the assume-breach
// path, can reach the host that runs it, worked out from the profile alone
// and failing closed: what a wrapper does with the host's file system is
// the wrapper's own, so a wrapper started as root counts. Empty: nothing
// the profile says puts the host within the guest's reach (the gates still
// prove from inside what it can reach).
func (p *Profile) HostReach() []HostAccess {
	var out []HostAccess
	add := func(field, format string, a ...any) {
		out = append(out, HostAccess{Field: field, Why: fmt.Sprintf(format, a...)})
	}
	if p.Network == NetworkHost {
		add("network", "host: the sandbox shares the lab's network namespace, where the harness's own services listen, loopback and abstract sockets included")
	}
	for _, b := range p.Binds() {
		if why := hostBindReach(b); why != "" {
			add(b.Field, "binds host %s at %s (%s): %s", b.Source, b.Target, bindMode(b), why)
		}
	}
	switch {
	case p.Target == "bwrap":
		if !p.bwrapUnshares("pid") {
			add("bwrap.args", "no --unshare-pid: the sandbox shares the host's pid namespace, and its root, the host's uid 0 in a user namespace, can signal the harness's processes")
		}
		if !p.bwrapUnshares("ipc") {
			add("bwrap.args", "no --unshare-ipc: the sandbox shares the host's IPC namespace (the harness's shared memory)")
		}
	case p.IsWrapper():
		for _, path := range bothPaths {
			if p.Identity(path).UID == 0 {
				add("paths."+string(path), "uid 0: the wrapper starts as root on the host's own file system (only /gatehouse and /etc/resolv.conf are the session's); what root may read or write there, a key file and the harness's binaries included, is the wrapper's decision, not the profile's")
			}
		}
		if why := p.wrapperHostTmp(); why != "" {
			add("target", "%s", why)
		}
	default: // docker, gvisor
		d := p.Docker
		if d.Privileged {
			add("docker.privileged", "a privileged container holds every capability and device of the host")
		}
		if d.PID == "host" {
			add("docker.pid", "host: the container shares the host's pid namespace: the harness's processes, their environment and memory, are a /proc away")
		}
		if d.IPC == "host" {
			add("docker.ipc", "host: the container shares the host's IPC namespace (the harness's shared memory)")
		}
		if d.Privileged || p.gvisor() || d.Userns == "private" {
			break // all of them, or capabilities that are gVisor's or a user namespace's own
		}
		for _, c := range escapeCaps {
			for _, path := range bothPaths {
				if p.caps(path)[c.name] {
					add(capField(p, path), "CAP_%s for root on the %s path, in the host's user namespace: %s", c.name, path, c.why)
					break
				}
			}
		}
	}
	return out
}

// Exposes says how the sandbox sees the host path hp (absolute and clean):
// the bind whose source is hp or a folder above it, or a wrapper's view of
// the host's whole file system. ok is false when the profile shows none of
// it.
func (p *Profile) Exposes(hp string) (a HostAccess, ok bool) {
	if p.IsWrapper() {
		return HostAccess{Field: "target", Writable: true,
			Why: fmt.Sprintf("%s: the wrapper's sandbox is made from the host's own file system, %s included", p.Target, hp)}, true
	}
	for _, b := range p.Binds() {
		src := hostPath(b.Source)
		if b.Type != "bind" || src == "" || (hp != src && !under(hp, src)) {
			continue
		}
		return HostAccess{Field: b.Field, Writable: !b.ReadOnly,
			Why: fmt.Sprintf("binds host %s at %s (%s), and %s lies there", b.Source, b.Target, bindMode(b), hp)}, true
	}
	return HostAccess{}, false
}

// hostBindReach says why a bind gives the guest the host, "" when it does
// not: a well-known dangerous path, or the harness's own folders.
func hostBindReach(b Bind) string {
	if b.Type != "bind" {
		return ""
	}
	if why := dangerousBind(b.Source); why != "" {
		return why
	}
	src := hostPath(b.Source)
	for _, d := range harnessDirs {
		if src != "" && (src == d || under(src, d) || under(d, src)) {
			return "the harness's own folder " + d + " (its working files, its ledger, the tools it runs as root)"
		}
	}
	return ""
}

// wrapperHostTmp says why a wrapper's sandbox shares the host's /tmp, ""
// when its arguments give it a private one.
func (p *Profile) wrapperHostTmp() string {
	switch p.Target {
	case TargetFirejail:
		if slices.Contains(p.Firejail.Args, "--private-tmp") {
			return ""
		}
		return "firejail without --private-tmp: the sandbox writes the host's /tmp, where root's programs look for their files"
	case TargetSRT:
		return "srt: the sandbox writes its TMPDIR /tmp/claude, in the host's /tmp"
	case TargetCodex:
		return "codex-sandbox: workspace-write leaves the host's /tmp writable to the sandbox"
	}
	return "exec: what the wrapper makes of the host's /tmp is not known from the profile"
}

func bindMode(b Bind) string {
	mode := "read-write"
	if b.ReadOnly {
		mode = "read-only"
	}
	if b.Devices {
		mode += ", devices usable"
	}
	return mode
}

// capField is where the profile gives path's root its capabilities.
func capField(p *Profile, path targets.Path) string {
	if path == targets.PathBreach && p.Paths.Breach.CapAdd != nil {
		return "paths.assume-breach.cap_add"
	}
	return "docker.cap_add"
}
