package profile

import (
	"fmt"
	"strings"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// Control is one thing standing between the sandbox and a forbidden
// effect, where it lives, and whether the guest can reach it to turn it
// off. The assume-breach path runs as root in the guest: a control within
// that root's reach is an inner layer, not an outer one.
type Control struct {
	Name  string `json:"name"`
	Where string `json:"where"`
	// Reach is, per path, ReachOutside or ReachInside; empty when there is
	// no such control or it does not apply.
	Reach map[string]string `json:"reach,omitempty"`
	Why   string            `json:"why"`
}

// Reach values.
const (
	ReachOutside = "outside" // the guest cannot change it, even as that path's user
	ReachInside  = "inside"  // the guest can change or bypass it on that path
)

var bothPaths = []targets.Path{targets.PathNormal, targets.PathBreach}

// controls lists, in a fixed order, the controls a run of the profile relies on.
func (p *Profile) controls() []Control {
	out := []Control{p.egressControl(), p.networkControl(), p.resolverControl(), p.identityControl(), p.mountControl(), p.seccompControl()}
	if c, ok := p.limitsControl(); ok {
		out = append(out, c)
	}
	return append(out, p.stopControl())
}

// reach maps each path to inside when in(path) holds, else outside.
func reach(in func(targets.Path) bool) map[string]string {
	m := map[string]string{}
	for _, path := range bothPaths {
		m[string(path)] = ReachOutside
		if in(path) {
			m[string(path)] = ReachInside
		}
	}
	return m
}

func (p *Profile) gvisor() bool { return p.Target == TargetGVisor || p.Docker.Runtime == "runsc" }

// runtimeFlag reports whether runtime_flags set f ("--network=host", or a
// boolean "--oci-seccomp"), in Go's flag forms: one dash or two, and for a
// boolean also "=true".
func (p *Profile) runtimeFlag(f string) bool {
	name := strings.TrimLeft(f, "-")
	for _, x := range p.Docker.RuntimeFlags {
		x = strings.TrimLeft(x, "-")
		if x == name || (!strings.Contains(name, "=") && x == name+"=true") {
			return true
		}
	}
	return false
}

func (p *Profile) identityControl() Control {
	where := "set by the runtime before each command starts: docker user, cap_add, cap_drop"
	if p.Target == "bwrap" {
		where = "set by bubblewrap when the session's sandbox starts (--uid, --gid, --cap-drop) and inherited by every command, in a user namespace of the sandbox's own"
	}
	if p.IsWrapper() {
		where = "the harness starts the wrapper as the path's user; what the wrapper keeps or drops is its own (read back from inside by the probe)"
	}
	var parts []string
	for _, path := range bothPaths {
		id := p.Identity(path)
		parts = append(parts, fmt.Sprintf("%s: uid %d, capabilities %s", path, id.UID, p.caps(path)))
	}
	why := strings.Join(parts, "; ")
	if p.Target != "bwrap" && !p.noNewPrivileges() {
		why += "; without no-new-privileges a setuid binary in the image can raise the normal path's privileges"
	}
	return Control{Name: "identity and capabilities", Where: where, Reach: reach(func(targets.Path) bool { return false }), Why: why}
}

func (p *Profile) noNewPrivileges() bool {
	if p.IsWrapper() {
		for _, a := range p.Firejail.Args {
			if a == "--nonewprivs" {
				return true
			}
		}
		return p.Target == TargetExec // the wrapper's own business: the probe reads it back
	}
	for _, o := range p.Docker.SecurityOpt {
		if o == "no-new-privileges" || o == "no-new-privileges:true" || o == "no-new-privileges=true" {
			return true
		}
	}
	return false
}

func (p *Profile) mountControl() Control {
	c := Control{Name: "mounts (binds and read-only flags)"}
	switch {
	case p.Target == "bwrap":
		c.Where = "the sandbox's mount namespace, which its own user namespace owns"
	case p.IsWrapper():
		c.Where = "the wrapper's own mount namespace, made from a private one of the harness's (session files at /gatehouse, resolv.conf)"
	case p.gvisor():
		c.Where = "gVisor's gofer on the host serves the sandbox's files"
		c.Reach = reach(func(targets.Path) bool { return false })
		c.Why = "the guest's capabilities are gVisor's: a remount inside changes nothing the gofer allows on the host"
		return c
	default:
		c.Where = "the container's mount namespace (runc)"
	}
	in := func(path targets.Path) bool { return p.caps(path)["SYS_ADMIN"] }
	c.Reach = reach(in)
	var parts []string
	for _, path := range bothPaths {
		if in(path) {
			parts = append(parts, string(path)+": CAP_SYS_ADMIN over it: read-only binds can be remounted read-write")
		} else {
			parts = append(parts, string(path)+": no CAP_SYS_ADMIN")
		}
	}
	c.Why = strings.Join(parts, "; ")
	return c
}

func (p *Profile) seccompControl() Control {
	c := Control{Name: "seccomp filter"}
	outside := func() {
		c.Reach = reach(func(targets.Path) bool { return false })
		c.Why = "the kernel never removes an installed filter"
	}
	if p.Target == "bwrap" {
		for _, o := range p.facts.bwrap {
			if o.Name == "--seccomp" || o.Name == "--add-seccomp-fd" {
				c.Where = "installed by bubblewrap from " + o.Operands[0]
				outside()
				return c
			}
		}
		c.Where, c.Why = "none", "bwrap.args install no filter"
		return c
	}
	if p.IsWrapper() {
		for _, a := range p.Firejail.Args {
			if a == "--seccomp" || strings.HasPrefix(a, "--seccomp=") || strings.HasPrefix(a, "--seccomp.") {
				c.Where = "installed by firejail (" + a + ")"
				outside()
				return c
			}
		}
		c.Where, c.Why = "the wrapper's own, if any", "not known from the profile: the probe's facts (seccomp) show what is in force"
		return c
	}
	switch {
	case p.Docker.Privileged:
		c.Where, c.Why = "none", "privileged containers run unconfined"
	case p.Docker.Seccomp == "unconfined":
		c.Where, c.Why = "none", "docker.seccomp is unconfined"
	case p.gvisor() && !p.runtimeFlag("--oci-seccomp"):
		c.Where, c.Why = "not applied to the guest", "runsc loads the container's profile only with --oci-seccomp; its own filter confines the sentry on the host"
	case p.Docker.Seccomp == "":
		c.Where = "Docker's default profile, installed by the runtime"
		outside()
	default:
		c.Where = "the profile's own (docker.seccomp), installed by the runtime"
		outside()
	}
	if p.gvisor() && c.Reach != nil {
		c.Where = strings.Replace(c.Where, "the runtime", "runsc, in gVisor's kernel (runsc before gVisor PR 12692 gave it to the first process only, not to execs)", 1)
	}
	return c
}

func (p *Profile) limitsControl() (Control, bool) {
	d := p.Docker
	var set []string
	if d.Memory != "" {
		set = append(set, "memory "+d.Memory)
	}
	if d.CPUs > 0 {
		set = append(set, fmt.Sprintf("cpus %g", d.CPUs))
	}
	if d.PidsLimit > 0 {
		set = append(set, fmt.Sprintf("pids %d", d.PidsLimit))
	}
	if len(set) == 0 {
		return Control{}, false
	}
	c := Control{Name: "resource limits", Where: "cgroup limits set by the runtime: " + strings.Join(set, ", ")}
	c.Reach = reach(func(targets.Path) bool { return d.Privileged })
	c.Why = "the container's cgroup files are read-only to it"
	if d.Privileged {
		c.Why = "a privileged container can write its cgroup files"
	}
	return c, true
}

func (p *Profile) stopControl() Control {
	where := fmt.Sprintf("the harness, on the host: the whole sandbox instance is killed at once; it must have stopped acting within %s", p.StopGrace())
	if p.Scope() == StopProcess {
		where = fmt.Sprintf("the harness, on the host: SIGTERM to each command's process group, SIGKILL after %s", p.StopGrace())
	}
	if len(p.Limits.StopCommand) > 0 {
		where = fmt.Sprintf("the platform's stop_command (%s), then ", p.Limits.StopCommand[0]) + where
	}
	why := "scope session: every process of the session"
	if p.Scope() == StopProcess {
		why = "scope process: only the command's own process group; a child that leaves it keeps running"
	}
	return Control{Name: "stop", Where: where, Reach: reach(func(targets.Path) bool { return false }), Why: why}
}
