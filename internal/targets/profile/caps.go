package profile

import (
	"sort"
	"strings"
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

// CapBase is a capability name without case or CAP_ prefix ("ALL" stays).
func CapBase(c string) string {
	return strings.TrimPrefix(strings.ToUpper(c), "CAP_")
}

// KnownCap reports whether c names a capability (in any case, with or
// without CAP_) or is ALL.
func KnownCap(c string) bool {
	b := CapBase(c)
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

// CapSet is a set of capability base names ("NET_ADMIN"): what a
// path's processes start with.
type CapSet map[string]bool

// AllCaps is every capability.
func AllCaps() CapSet {
	s := CapSet{}
	for _, c := range linuxCaps {
		s[c] = true
	}
	return s
}

// CapsOf is the set a list of names gives (ALL: every one).
func CapsOf(list []string) CapSet {
	s := CapSet{}
	for _, c := range list {
		if CapBase(c) == "ALL" {
			return AllCaps()
		}
		s[CapBase(c)] = true
	}
	return s
}

func (s CapSet) String() string {
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
