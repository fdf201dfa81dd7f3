package profile

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/targets/docker"
)

// Targets whose sessions are containers, configured by the docker section.
const (
	TargetDocker = "docker"
	TargetGVisor = "gvisor" // docker with runtime runsc
)

// docker checks the docker section against the rest of the profile and
// fills what it leaves to it, so the section the target gets is the whole
// truth: network from `network`, user from paths.normal, runsc for gvisor,
// and a seccomp file's bytes (recorded like the egress ruleset).
func (v *validator) docker() error {
	p := v.p
	d := &p.Docker
	isDocker := p.Target == TargetDocker || p.Target == TargetGVisor
	if !isDocker {
		if !reflect.DeepEqual(*d, docker.Spec{}) {
			return v.fail("docker", fmt.Errorf("only for target docker or gvisor (target is %s)", p.Target))
		}
		return nil
	}
	if len(p.Bwrap.Args) > 0 {
		return v.fail("bwrap", fmt.Errorf("not for target %s", p.Target))
	}
	switch {
	case d.Network == "":
		d.Network = string(p.Network)
	case d.Network != string(p.Network):
		return v.fail("docker.network", fmt.Errorf("%q differs from network %q: say it once, or the same twice", d.Network, p.Network))
	}
	if p.Target == TargetGVisor {
		switch d.Runtime {
		case "":
			d.Runtime = "runsc"
		case "runsc":
		default:
			return v.fail("docker.runtime", fmt.Errorf("target gvisor runs runsc, not %q", d.Runtime))
		}
	}
	normal := p.Paths.Normal
	if d.User == "" {
		d.User = fmt.Sprintf("%d:%d", normal.UID, normal.GID)
	} else if uid, gid, ok := numericUser(d.User); ok && (uid != normal.UID || (gid >= 0 && gid != normal.GID)) {
		return v.fail("docker.user", fmt.Errorf("%q is not paths.normal (%d:%d)", d.User, normal.UID, normal.GID))
	}
	if s := d.Seccomp; s != "" && s != "unconfined" && !strings.HasPrefix(strings.TrimSpace(s), "{") {
		key, err := v.readRef(s)
		if err != nil {
			return v.fail("docker.seccomp", err)
		}
		d.Seccomp = string(p.files[key])
	}
	if err := v.dockerFields(); err != nil {
		return err
	}
	d.StopLimit, d.StopScope = p.StopGrace(), string(p.Scope())
	// The assume-breach path's root holds exactly paths.assume-breach.cap_add
	// when it is given (the shim sets it on root execs), as with bwrap.
	d.BreachCaps = p.Paths.Breach.CapAdd
	if err := d.Validate(); err != nil {
		return v.fail("docker", errors.New(strings.TrimPrefix(err.Error(), "docker: spec: ")))
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
