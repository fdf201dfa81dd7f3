package dockerkind

import (
	"fmt"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
)

var bothPaths = []targets.Path{targets.PathNormal, targets.PathBreach}

// Describe says where a container's controls live: the runtime's (runc's)
// namespaces and filters, or gVisor's kernel and gofer when the runtime is
// runsc, whichever target named it.
func (k Kind) Describe(p *profile.Profile) profile.Description {
	gv := k.gvisor || SpecOf(p).Runtime == "runsc"
	d := *SpecOf(p)
	desc := profile.Description{
		Env:           d.Env,
		Runtime:       "runc (the daemon's default)",
		Caps:          map[targets.Path]profile.CapSet{},
		HostUser:      map[targets.Path]profile.HostUser{},
		IdentityWhere: "set by the runtime before each command starts: docker user, cap_add, cap_drop",
		Mounts:        profile.Control{Where: "the container's mount namespace (runc)"},
		Seccomp:       seccomp(p, gv),
		Limits:        limits(d.Memory, d.CPUs, d.PidsLimit, d.Privileged),
	}
	if d.Runtime != "" {
		desc.Runtime = d.Runtime
	}
	for _, path := range bothPaths {
		desc.Caps[path] = caps(p, path)
		desc.HostUser[path] = hostUser(p, path, gv)
	}
	if !noNewPrivileges(d.SecurityOpt) {
		desc.IdentityNote = "without no-new-privileges a setuid binary in the image can raise the normal path's privileges"
	}
	if gv {
		desc.Mounts = profile.Control{
			Where: "gVisor's gofer on the host serves the sandbox's files",
			Reach: profile.Outside(),
			Why:   "the guest's capabilities are gVisor's: a remount inside changes nothing the gofer allows on the host",
		}
		desc.NetworkOutOfReach = "the guest's netfilter is gVisor's own kernel's; the host's nftables of the session namespace are out of its reach, whatever its capabilities"
		if !runtimeFlag(d.RuntimeFlags, "--network=host") {
			desc.EgressBypass = "runsc's own netstack sends through a packet socket the namespace's output hook never sees (docs/docker.md); runtime_flags: [--network=host] makes it apply"
		}
		desc.SecretInside = "under gVisor a process keeps its environment in gVisor's kernel, so the harness cannot see from the host that the planted one runs: use where: outside, or leave secret_process out (that place is then reported as not tested)"
	}
	for i, m := range d.Mounts {
		desc.Binds = append(desc.Binds, profile.Bind{Type: m.Type, Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly, Field: fmt.Sprintf("docker.mounts[%d]", i)})
	}
	desc.HostReach = hostReach(p, desc.Caps, gv)
	return desc
}

// runtimeFlag reports whether runtime_flags set f ("--network=host", or a
// boolean "--oci-seccomp"), in Go's flag forms: one dash or two, and for a
// boolean also "=true".
func runtimeFlag(flags []string, f string) bool {
	name := strings.TrimLeft(f, "-")
	for _, x := range flags {
		x = strings.TrimLeft(x, "-")
		if x == name || (!strings.Contains(name, "=") && x == name+"=true") {
			return true
		}
	}
	return false
}

func noNewPrivileges(opts []string) bool {
	for _, o := range opts {
		if o == "no-new-privileges" || o == "no-new-privileges:true" || o == "no-new-privileges=true" {
			return true
		}
	}
	return false
}

func seccomp(p *profile.Profile, gvisor bool) profile.Control {
	var c profile.Control
	outside := func() {
		c.Reach = profile.Outside()
		c.Why = profile.FilterStays
	}
	switch d := SpecOf(p); {
	case d.Privileged:
		c.Where, c.Why = "none", "privileged containers run unconfined"
	case d.Seccomp == "unconfined":
		c.Where, c.Why = "none", "docker.seccomp is unconfined"
	case gvisor && !runtimeFlag(d.RuntimeFlags, "--oci-seccomp"):
		c.Where, c.Why = "not applied to the guest", "runsc loads the container's profile only with --oci-seccomp; its own filter confines the sentry on the host"
	case d.Seccomp == "":
		c.Where = "Docker's default profile, installed by the runtime"
		outside()
	default:
		c.Where = "the profile's own (docker.seccomp), installed by the runtime"
		outside()
	}
	if gvisor && c.Reach != nil {
		c.Where = strings.Replace(c.Where, "the runtime", "runsc, in gVisor's kernel (runsc before gVisor PR 12692 gave it to the first process only, not to execs)", 1)
	}
	return c
}

func limits(memory string, cpus float64, pids int64, privileged bool) *profile.Control {
	var set []string
	if memory != "" {
		set = append(set, "memory "+memory)
	}
	if cpus > 0 {
		set = append(set, fmt.Sprintf("cpus %g", cpus))
	}
	if pids > 0 {
		set = append(set, fmt.Sprintf("pids %d", pids))
	}
	if len(set) == 0 {
		return nil
	}
	c := &profile.Control{Where: "cgroup limits set by the runtime: " + strings.Join(set, ", ")}
	c.Reach = profile.ReachWhere(func(targets.Path) bool { return privileged })
	c.Why = "the container's cgroup files are read-only to it"
	if privileged {
		c.Why = "a privileged container can write its cgroup files"
	}
	return c
}

// hostUser: the engine adds no user-namespace remapping; under gVisor the
// uid exists only in gVisor's kernel.
func hostUser(p *profile.Profile, path targets.Path, gvisor bool) profile.HostUser {
	id := p.Identity(path)
	if gvisor {
		return profile.HostUser{Kind: profile.HostEngine, Text: fmt.Sprintf("uid %d exists only in gVisor's kernel; on the host the sandbox is runsc's processes, as the engine starts them (read back at run time)", id.UID)}
	}
	return profile.HostUser{Kind: profile.HostEngine, UID: &id.UID, GID: &id.GID, Text: fmt.Sprintf("host uid %d, gid %d: the engine adds no user-namespace remapping, so the container's user is the same uid on the host (read back at run time)", id.UID, id.GID)}
}

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

func hostReach(p *profile.Profile, caps map[targets.Path]profile.CapSet, gvisor bool) []profile.HostAccess {
	var out []profile.HostAccess
	add := func(field, format string, a ...any) {
		out = append(out, profile.HostAccess{Field: field, Why: fmt.Sprintf(format, a...)})
	}
	d := SpecOf(p)
	if d.Privileged {
		add("docker.privileged", "a privileged container holds every capability and device of the host")
	}
	if d.PID == "host" {
		add("docker.pid", "host: the container shares the host's pid namespace: the harness's processes, their environment and memory, are a /proc away")
	}
	if d.IPC == "host" {
		add("docker.ipc", "host: the container shares the host's IPC namespace (the harness's shared memory)")
	}
	if d.Privileged || gvisor || d.Userns == "private" {
		return out // all of them, or capabilities that are gVisor's or a user namespace's own
	}
	for _, c := range escapeCaps {
		for _, path := range bothPaths {
			if caps[path][c.name] {
				add(capField(p, path), "CAP_%s for root on the %s path, in the host's user namespace: %s", c.name, path, c.why)
				break
			}
		}
	}
	return out
}

// capField is where the profile gives path's root its capabilities.
func capField(p *profile.Profile, path targets.Path) string {
	if path == targets.PathBreach && p.Paths.Breach.CapAdd != nil {
		return "paths.assume-breach.cap_add"
	}
	return "docker.cap_add"
}
