package profile

import (
	"sort"
	"strings"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// linuxCaps are the capability names of Linux 5.9 and later, without the
// CAP_ prefix. A name outside this list makes bwrap and Docker refuse to
// start the sandbox, so the loader refuses it first.
var linuxCaps = []string{
	"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL",
	"SETGID", "SETUID", "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE",
	"NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
	"SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
	"SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME",
	"SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL",
	"SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM",
	"BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE",
}

// dockerDefaultCaps is what Docker (moby 20.10) gives root in a container
// unless told otherwise.
var dockerDefaultCaps = []string{
	"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID",
	"SETUID", "SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL",
	"AUDIT_WRITE",
}

// capBase is a capability name without case or CAP_ prefix ("ALL" stays).
func capBase(c string) string {
	return strings.TrimPrefix(strings.ToUpper(c), "CAP_")
}

// knownCap reports whether c names a capability (in any case, with or
// without CAP_) or is ALL.
func knownCap(c string) bool {
	b := capBase(c)
	if b == "ALL" {
		return true
	}
	for _, k := range linuxCaps {
		if k == b {
			return true
		}
	}
	return false
}

// capSet is a set of capability base names.
type capSet map[string]bool

func allCaps() capSet {
	s := capSet{}
	for _, c := range linuxCaps {
		s[c] = true
	}
	return s
}

func capsOf(list []string) capSet {
	s := capSet{}
	for _, c := range list {
		if capBase(c) == "ALL" {
			return allCaps()
		}
		s[capBase(c)] = true
	}
	return s
}

func (s capSet) String() string {
	if len(s) == 0 {
		return "none"
	}
	if len(s) == len(linuxCaps) {
		return "all"
	}
	var out []string
	for c := range s {
		out = append(out, "CAP_"+c)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// dockerCaps is the capability set of root in a container, the way moby
// combines the default set with cap_add and cap_drop.
func dockerCaps(privileged bool, add, drop []string) capSet {
	dropped := capsOf(drop)
	switch {
	case privileged:
		return allCaps()
	case capsOf(add).String() == "all":
		s := allCaps()
		for c := range dropped {
			delete(s, c)
		}
		return s
	case dropped.String() == "all":
		return capsOf(add)
	}
	s := capSet{}
	for _, c := range dockerDefaultCaps {
		if !dropped[c] {
			s[c] = true
		}
	}
	for c := range capsOf(add) {
		s[c] = true
	}
	return s
}

// caps is the capability set a path's processes start with.
func (p *Profile) caps(path targets.Path) capSet {
	id := p.Identity(path)
	if p.Target == "bwrap" {
		// On the normal path bubblewrap runs unprivileged, and then keeps
		// no capability even for uid 0 inside.
		if id.UID != 0 || path != targets.PathBreach {
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
	if p.IsWrapper() {
		if id.UID != 0 {
			return capSet{} // the wrapper starts as this user, with none
		}
		for _, a := range p.Firejail.Args {
			if a == "--caps.drop=all" {
				return capSet{}
			}
		}
		return allCaps() // the wrapper starts as root; what it keeps is its own business, read back by the probe
	}
	if path == targets.PathNormal && id.UID != 0 {
		return capSet{} // Docker gives a non-root user no effective capabilities
	}
	if path == targets.PathBreach && id.CapAdd != nil {
		return capsOf(id.CapAdd) // the lab daemon's shim gives root execs exactly these
	}
	return dockerCaps(p.Docker.Privileged, p.Docker.CapAdd, p.Docker.CapDrop) // assume-breach execs as 0:0
}
