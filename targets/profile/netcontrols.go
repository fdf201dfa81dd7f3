package profile

import (
	"strings"

	"github.com/gatehouse-dev/gatehouse/targets"
)

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
	case p.Target == TargetFirejail && firejailOwnNet(p.Firejail.Args):
		return false, "firejail.args give the sandbox a network namespace of firejail's own (--net=...); the session's, which holds the ruleset, is not the sandbox's"
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

// firejailOwnNet: --net=none or --net=IFACE makes firejail's sandbox a
// network namespace of its own instead of the one it starts in.
func firejailOwnNet(args []string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, "--net=") {
			return true
		}
	}
	return false
}
