package profile

import (
	"fmt"
	"strings"

	"gatehouse/targets"
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

// caps is the capability set a path's processes start with.
func (p *Profile) caps(path targets.Path) capSet {
	id := p.Identity(path)
	if p.Target == "bwrap" {
		if id.UID != 0 {
			return capSet{}
		}
		if path == targets.PathBreach && id.CapAdd != nil {
			return capsOf(id.CapAdd) // the target adds --cap-drop ALL, then these
		}
		s := allCaps() // bwrap keeps every capability for uid 0 in its user namespace
		for _, o := range p.facts.bwrap {
			if o.Name == "--cap-drop" {
				if capBase(o.Operands[0]) == "ALL" {
					s = capSet{}
				}
				delete(s, capBase(o.Operands[0]))
			}
		}
		return s
	}
	if path == targets.PathNormal && id.UID != 0 {
		return capSet{} // Docker gives a non-root user no effective capabilities
	}
	return dockerCaps(p.Docker.Privileged, p.Docker.CapAdd, p.Docker.CapDrop) // assume-breach execs as 0:0
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

func (p *Profile) runtimeFlag(f string) bool {
	for _, x := range p.Docker.RuntimeFlags {
		if x == f || x == "-"+strings.TrimPrefix(f, "--") {
			return true
		}
	}
	return false
}

// netAdmin: the path's root can change the session namespace's network
// (nftables, routes, addresses). bwrap's capabilities live in a user
// namespace of the sandbox's own, which does not own a namespace the
// harness made; gVisor answers netfilter calls with its own kernel.
func (p *Profile) netAdmin(path targets.Path) bool {
	if p.Target == "bwrap" || p.gvisor() {
		return false
	}
	return p.caps(path)["NET_ADMIN"]
}

// egressApplies says whether the ruleset governs the sandbox's traffic.
func (p *Profile) egressApplies() (bool, string) {
	switch {
	case p.Target == "bwrap" && p.bwrapUnshares("net"):
		return false, "bwrap.args give the sandbox an empty network namespace of its own; the session's, which holds the ruleset, is never used"
	case p.gvisor() && !p.runtimeFlag("--network=host"):
		return false, "runsc's own netstack sends through a packet socket the namespace's output hook never sees (docs/docker.md); runtime_flags: [--network=host] makes it apply"
	}
	return true, "applied in the session's network namespace before the sandbox starts, and read back table by table"
}

func (p *Profile) egressControl() Control {
	c := Control{Name: "egress ruleset", Where: "nftables in the session's network namespace"}
	if p.Egress == "" {
		c.Where = "none"
		c.Why = map[Network]string{
			NetworkLab:  "no ruleset: nothing filters what the session sends to the lab",
			NetworkHost: "no ruleset: the sandbox shares the lab namespace",
			NetworkNone: "no network to filter",
		}[p.Network]
		return c
	}
	if ok, why := p.egressApplies(); !ok {
		c.Why = "does not apply: " + why
		return c
	}
	c.Reach = reach(p.netAdmin)
	c.Why = p.netWhy("flush or replace the rules")
	return c
}

// netWhy explains reach over the session's network namespace; can is what
// CAP_NET_ADMIN there allows.
func (p *Profile) netWhy(can string) string {
	switch {
	case p.Target == "bwrap":
		return "bwrap joins the namespace, then makes a user namespace of its own: capabilities there, root's too, give no power over a namespace the host's user namespace owns"
	case p.gvisor():
		return "the guest's netfilter is gVisor's own kernel's; the host's nftables of the session namespace are out of its reach, whatever its capabilities"
	}
	var parts []string
	for _, path := range bothPaths {
		if p.netAdmin(path) {
			parts = append(parts, string(path)+": root has CAP_NET_ADMIN in the host's user namespace, which owns the namespace: it can "+can)
		} else {
			parts = append(parts, string(path)+": no CAP_NET_ADMIN")
		}
	}
	return strings.Join(parts, "; ")
}

func (p *Profile) networkControl() Control {
	c := Control{Name: "network namespace, addresses and routes"}
	switch p.Network {
	case NetworkNone:
		c.Where = "an empty network namespace (loopback only)"
		c.Why = "nothing to reach; gates cannot show a positive control, so they are INCONCLUSIVE"
		return c
	case NetworkHost:
		c.Where = "the lab namespace itself, shared with the lab's endpoints and every other session"
	default:
		c.Where = "a session namespace of its own, joined to the lab by a veth the harness made"
	}
	if p.Target == "bwrap" && p.bwrapUnshares("net") {
		c.Where, c.Why = "an empty namespace of bwrap's own", "the session's namespace is never used"
		return c
	}
	c.Reach = reach(p.netAdmin)
	c.Why = p.netWhy("add addresses and routes, and bring interfaces up")
	return c
}

func (p *Profile) resolverControl() Control {
	r := p.Resolver
	if r == "" {
		r = "the lab's resolver"
	}
	return Control{
		Name: "resolver", Where: "/etc/resolv.conf in the sandbox (a read-only bind) naming " + r,
		Reach: reach(func(targets.Path) bool { return true }),
		Why:   "advisory: a process may ask any resolver it can reach; only the network controls decide what it reaches",
	}
}

func (p *Profile) identityControl() Control {
	where := "set by the runtime before each command starts: docker user, cap_add, cap_drop"
	if p.Target == "bwrap" {
		where = "set by bubblewrap before each command starts (--uid, --gid, --cap-drop), in a user namespace of the sandbox's own"
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
	where := fmt.Sprintf("the harness, on the host: SIGTERM, then SIGKILL after %s", p.StopGrace())
	if len(p.Limits.StopCommand) > 0 {
		where = fmt.Sprintf("the platform's stop_command (%s), then ", p.Limits.StopCommand[0]) + where
	}
	why := "scope session: every process of the session"
	if p.Scope() == StopProcess {
		why = "scope process: only the command's own process group; a child that leaves it keeps running"
	}
	return Control{Name: "stop", Where: where, Reach: reach(func(targets.Path) bool { return false }), Why: why}
}

// egressWarnings: a ruleset that does not govern the sandbox, or that root
// in the guest can take down, is not the outer layer a reader assumes.
func (v *validator) egressWarnings() []Warning {
	p := v.p
	if p.Egress == "" {
		return nil
	}
	warn := func(msg string) []Warning {
		return []Warning{{File: v.file, Line: v.line("egress"), Field: "egress", Msg: msg}}
	}
	if ok, why := p.egressApplies(); !ok {
		return warn("the ruleset does not apply: " + why)
	}
	var in []string
	for _, path := range bothPaths {
		if p.netAdmin(path) {
			in = append(in, string(path))
		}
	}
	if len(in) > 0 {
		return warn("the ruleset is within the guest's reach on the " + strings.Join(in, " and ") + " path: root there has CAP_NET_ADMIN over the session namespace")
	}
	return nil
}
