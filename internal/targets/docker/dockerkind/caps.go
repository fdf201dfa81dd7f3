package dockerkind

import (
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// defaultCaps is what Docker (moby 20.10) gives root in a container
// unless told otherwise.
var defaultCaps = []string{
	"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID",
	"SETUID", "SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL",
	"AUDIT_WRITE",
}

// caps is the capability set a path's processes start with.
func caps(p *profile.Profile, path targets.Path) profile.CapSet {
	id := p.Identity(path)
	if path == targets.PathNormal && id.UID != 0 {
		return profile.CapSet{} // Docker gives a non-root user no effective capabilities
	}
	if path == targets.PathBreach && id.CapAdd != nil {
		return profile.CapsOf(id.CapAdd) // the lab daemon's shim gives root execs exactly these
	}
	d := SpecOf(p)
	return rootCaps(d.Privileged, d.CapAdd, d.CapDrop) // assume-breach execs as 0:0
}

// rootCaps is the capability set of root in a container, the way moby
// combines the default set with cap_add and cap_drop.
func rootCaps(privileged bool, add, drop []string) profile.CapSet {
	dropped := profile.CapsOf(drop)
	switch {
	case privileged:
		return profile.AllCaps()
	case profile.CapsOf(add).String() == "all":
		s := profile.AllCaps()
		for c := range dropped {
			delete(s, c)
		}
		return s
	case dropped.String() == "all":
		return profile.CapsOf(add)
	}
	s := profile.CapSet{}
	for _, c := range defaultCaps {
		if !dropped[c] {
			s[c] = true
		}
	}
	for c := range profile.CapsOf(add) {
		s[c] = true
	}
	return s
}
