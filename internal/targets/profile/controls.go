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

// Outside is reach outside on both paths: no path's guest can change it.
func Outside() map[string]string { return reach(func(targets.Path) bool { return false }) }

// ReachWhere maps each path to ReachInside when in(path) holds, else
// ReachOutside.
func ReachWhere(in func(targets.Path) bool) map[string]string { return reach(in) }

// FilterStays is why an installed seccomp filter is out of the guest's reach.
const FilterStays = "the kernel never removes an installed filter"

func (p *Profile) identityControl() Control {
	d := p.describe()
	var parts []string
	for _, path := range bothPaths {
		id := p.Identity(path)
		parts = append(parts, fmt.Sprintf("%s: uid %d, capabilities %s", path, id.UID, d.Caps[path]))
	}
	why := strings.Join(parts, "; ")
	if d.IdentityNote != "" {
		why += "; " + d.IdentityNote
	}
	return Control{Name: "identity and capabilities", Where: d.IdentityWhere, Reach: reach(func(targets.Path) bool { return false }), Why: why}
}

func (p *Profile) mountControl() Control {
	c := p.describe().Mounts
	c.Name = "mounts (binds and read-only flags)"
	if c.Reach != nil {
		return c
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
	c := p.describe().Seccomp
	c.Name = "seccomp filter"
	return c
}

func (p *Profile) limitsControl() (Control, bool) {
	c := p.describe().Limits
	if c == nil {
		return Control{}, false
	}
	out := *c
	out.Name = "resource limits"
	return out, true
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
