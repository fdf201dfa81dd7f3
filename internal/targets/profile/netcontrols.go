package profile

import (
	"strings"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// netAdmin: the path's root can change the session namespace's network
// (nftables, routes, addresses): CAP_NET_ADMIN decides, unless the kind
// says no root of the sandbox can (Description.NetworkOutOfReach).
func (p *Profile) netAdmin(path targets.Path) bool {
	if p.describe().NetworkOutOfReach != "" {
		return false
	}
	return p.caps(path)["NET_ADMIN"]
}

// egressApplies says whether the ruleset governs the sandbox's traffic.
func (p *Profile) egressApplies() (bool, string) {
	if why := p.describe().EgressBypass; why != "" {
		return false, why
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
	if why := p.describe().NetworkOutOfReach; why != "" {
		return why
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
	if own := p.describe().OwnNetwork; own != nil {
		c.Where, c.Why = own.Where, own.Why
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
