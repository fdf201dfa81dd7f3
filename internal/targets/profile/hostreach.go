package profile

import (
	"fmt"
)

// HostAccess is one way a sandbox of the profile reaches the host that
// starts it: the harness's processes (their environment and memory), its
// files (a signing key, its binaries, its own folders) or the services it
// runs. Field is where the profile says it.
type HostAccess struct {
	Field    string `json:"field"`
	Why      string `json:"why"`
	Writable bool   `json:"writable,omitempty"` // Exposes: the guest may write there
}

func (a HostAccess) String() string { return a.Field + ": " + a.Why }

// harnessDirs are where the harness keeps what no sandbox may touch: its
// working folders and ledger, and the tools it runs as root.
var harnessDirs = []string{"/run/gatehouse", "/var/cache/gatehouse"}

// HostReach lists every way the profile's guest, root on the assume-breach
// path, can reach the host that runs it, worked out from the profile alone
// and failing closed: what a wrapper does with the host's file system is
// the wrapper's own, so a wrapper started as root counts. Empty: nothing
// the profile says puts the host within the guest's reach (the gates still
// prove from inside what it can reach).
func (p *Profile) HostReach() []HostAccess {
	var out []HostAccess
	add := func(field, format string, a ...any) {
		out = append(out, HostAccess{Field: field, Why: fmt.Sprintf(format, a...)})
	}
	if p.Network == NetworkHost {
		add("network", "host: the sandbox shares the lab's network namespace, where the harness's own services listen, loopback and abstract sockets included")
	}
	for _, b := range p.Binds() {
		if why := hostBindReach(b); why != "" {
			add(b.Field, "binds host %s at %s (%s): %s", b.Source, b.Target, bindMode(b), why)
		}
	}
	return append(out, p.describe().HostReach...)
}

// Exposes says how the sandbox sees the host path hp (absolute and clean):
// the bind whose source is hp or a folder above it, or a wrapper's view of
// the host's whole file system. ok is false when the profile shows none of
// it.
func (p *Profile) Exposes(hp string) (a HostAccess, ok bool) {
	if p.describe().WholeHost {
		return HostAccess{Field: "target", Writable: true,
			Why: fmt.Sprintf("%s: the wrapper's sandbox is made from the host's own file system, %s included", p.Target, hp)}, true
	}
	for _, b := range p.Binds() {
		src := hostPath(b.Source)
		if b.Type != "bind" || src == "" || (hp != src && !under(hp, src)) {
			continue
		}
		return HostAccess{Field: b.Field, Writable: !b.ReadOnly,
			Why: fmt.Sprintf("binds host %s at %s (%s), and %s lies there", b.Source, b.Target, bindMode(b), hp)}, true
	}
	return HostAccess{}, false
}

// hostBindReach says why a bind gives the guest the host, "" when it does
// not: a well-known dangerous path, or the harness's own folders.
func hostBindReach(b Bind) string {
	if b.Type != "bind" {
		return ""
	}
	if why := dangerousBind(b.Source); why != "" {
		return why
	}
	src := hostPath(b.Source)
	for _, d := range harnessDirs {
		if src != "" && (src == d || under(src, d) || under(d, src)) {
			return "the harness's own folder " + d + " (its working files, its ledger, the tools it runs as root)"
		}
	}
	return ""
}

func bindMode(b Bind) string {
	mode := "read-write"
	if b.ReadOnly {
		mode = "read-only"
	}
	if b.Devices {
		mode += ", devices usable"
	}
	return mode
}
