// Package dockerkind is what the docker and gvisor targets know about
// their profiles: the docker section's checks (filled in so the section
// the target gets is the whole truth) and where a container's controls
// live. It is a package of its own because the section's type, docker.Spec,
// is what internal/targets/docker runs, and that package cannot import the
// profile: this one declares the section and hands it out (SpecOf).
package dockerkind

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// Targets whose sessions are containers, configured by the docker section.
const (
	Docker = "docker"
	GVisor = "gvisor" // docker with runtime runsc
)

// Kind is the docker or the gvisor target's kind.
type Kind struct{ gvisor bool }

// New returns the kind of target name, Docker or GVisor.
func New(name string) Kind { return Kind{gvisor: name == GVisor} }

var _ profile.Kind = Kind{}

// Name is Docker or GVisor.
func (k Kind) Name() string {
	if k.gvisor {
		return GVisor
	}
	return Docker
}

// Load checks the docker section against the rest of the profile and
// fills what it leaves to it, so the section the target gets is the whole
// truth: network from `network`, user from paths.normal, runsc for gvisor,
// and a seccomp file's bytes (recorded like the egress ruleset).
func (k Kind) Load(l *profile.Loading) error {
	p := l.Profile()
	d := SpecOf(p)
	switch {
	case d.Network == "":
		d.Network = string(p.Network)
	case d.Network != string(p.Network):
		return l.Fail("docker.network", fmt.Errorf("%q differs from network %q: say it once, or the same twice", d.Network, p.Network))
	}
	if k.gvisor {
		switch d.Runtime {
		case "":
			d.Runtime = "runsc"
		case "runsc":
		default:
			return l.Fail("docker.runtime", fmt.Errorf("target gvisor runs runsc, not %q", d.Runtime))
		}
	}
	normal := p.Paths.Normal
	if d.User == "" {
		d.User = fmt.Sprintf("%d:%d", normal.UID, normal.GID)
	} else if uid, gid, ok := numericUser(d.User); ok && (uid != normal.UID || (gid >= 0 && gid != normal.GID)) {
		return l.Fail("docker.user", fmt.Errorf("%q is not paths.normal (%d:%d)", d.User, normal.UID, normal.GID))
	}
	if s := d.Seccomp; s != "" && s != "unconfined" && !strings.HasPrefix(strings.TrimSpace(s), "{") {
		key, err := l.ReadFile(s)
		if err != nil {
			return l.Fail("docker.seccomp", err)
		}
		b, _ := p.File(key)
		d.Seccomp = string(b)
	}
	if err := fields(l); err != nil {
		return err
	}
	d.StopLimit, d.StopScope = p.StopGrace(), string(p.Scope())
	// The assume-breach path's root holds exactly paths.assume-breach.cap_add
	// when it is given (the shim sets it on root execs), as with bwrap.
	d.BreachCaps = p.Paths.Breach.CapAdd
	if err := d.Validate(); err != nil {
		return l.Fail("docker", errors.New(strings.TrimPrefix(err.Error(), "docker: spec: ")))
	}
	return nil
}

// numericUser parses "uid" or "uid:gid"; gid is -1 when absent.
func numericUser(s string) (uid, gid int, ok bool) {
	u, g, hasG := strings.Cut(s, ":")
	uid, err := strconv.Atoi(u)
	if err != nil {
		return 0, 0, false
	}
	gid = -1
	if hasG {
		if gid, err = strconv.Atoi(g); err != nil {
			return 0, 0, false
		}
	}
	return uid, gid, true
}
