package bwrap

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// KindName is the bwrap target's `target:` value.
const KindName = "bwrap"

// Kind is the bwrap target's kind: the bwrap section (bubblewrap's own
// options, checked against bubblewrap 0.8: options.go) and where
// bubblewrap's controls live.
type Kind struct{}

var (
	_ profile.Kind     = Kind{}
	_ profile.Checker  = Kind{}
	_ profile.Referrer = Kind{}
)

// Name is KindName.
func (Kind) Name() string { return KindName }

// Sections is the bwrap section.
func (Kind) Sections() []profile.Section { return []profile.Section{section} }

// Load requires bwrap.args, checks each option and reads the files they
// name.
func (Kind) Load(l *profile.Loading) error {
	if len(SectionOf(l.Profile()).Args) == 0 {
		return l.Fail("bwrap.args", errors.New("required for target bwrap"))
	}
	return loadArgs(l)
}

// References checks those in bwrap.args: the target expands each.
func (Kind) References(l *profile.Loading) error {
	for i, a := range SectionOf(l.Profile()).Args {
		if err := l.Reference(a); err != nil {
			return l.FailItem("bwrap.args", i, fmt.Errorf("bwrap.args[%d]: %w", i, err))
		}
	}
	return nil
}

// options are the profile's bwrap.args split into options; nil when they
// do not parse (Load refused them).
func options(p *profile.Profile) []option {
	opts, _, err := parseArgs(SectionOf(p).Args)
	if err != nil {
		return nil
	}
	return opts
}

// Check refuses bwrap arguments that contradict `network`: the bwrap
// target would refuse every session, or run them all without the network
// the profile names.
func (Kind) Check(l *profile.Loading) error {
	p := l.Profile()
	if !unshares(p, "user") {
		return l.Fail("bwrap.args", errors.New("need --unshare-user (or --unshare-all) so that paths can set the uid"))
	}
	own := unshares(p, "net")
	switch {
	case p.Network == profile.NetworkNone && !own:
		return l.Fail("network", errors.New("none needs --unshare-net (or --unshare-all) in bwrap.args: "+
			"a sandbox never runs in the machine's own network namespace"))
	case p.Network != profile.NetworkNone && own:
		return l.Fail("network", fmt.Errorf("%s, but bwrap.args unshare the network: the sandbox would get an empty namespace "+
			"of its own and never use the %s one (no positive control, every gate INCONCLUSIVE); say network: none, or drop --unshare-net", p.Network, p.Network))
	}
	return nil
}

// unshares reports whether bwrap.args give the sandbox a namespace of its
// own: "user", "net", "pid" or "ipc". For net the last word wins (bwrap
// applies --share-net after --unshare-all in order).
func unshares(p *profile.Profile, ns string) bool {
	return unsharesIn(options(p), ns)
}

func unsharesIn(opts []option, ns string) bool {
	on := false
	for _, o := range opts {
		switch {
		case o.Name == "--unshare-all", o.Name == "--unshare-"+ns, ns == "user" && o.Name == "--unshare-user-try":
			on = true
		case ns == "net" && o.Name == "--share-net":
			on = false
		}
	}
	return on
}

// Describe: bubblewrap sets identity, mounts and filter when the session's
// sandbox starts, in a user namespace of the sandbox's own.
func (Kind) Describe(p *profile.Profile) profile.Description {
	opts := options(p)
	d := profile.Description{
		Words:             []profile.Words{{Field: "bwrap.args", List: SectionOf(p).Args}},
		Binds:             binds(opts),
		Runtime:           "bubblewrap",
		Caps:              map[targets.Path]profile.CapSet{},
		HostUser:          map[targets.Path]profile.HostUser{},
		NetworkOutOfReach: "bwrap joins the namespace, then makes a user namespace of its own: capabilities there, root's too, give no power over a namespace the host's user namespace owns",
		IdentityWhere:     "set by bubblewrap when the session's sandbox starts (--uid, --gid, --cap-drop) and inherited by every command, in a user namespace of the sandbox's own",
		Mounts:            profile.Control{Where: "the sandbox's mount namespace, which its own user namespace owns"},
		Seccomp:           profile.Control{Where: "none", Why: "bwrap.args install no filter"},
		SecretOther:       profile.ErrOneUser,
	}
	for _, path := range []targets.Path{targets.PathNormal, targets.PathBreach} {
		d.Caps[path] = caps(p, opts, path)
		d.HostUser[path] = planHostUser(p, path)
	}
	for _, o := range opts {
		if o.Name == "--seccomp" || o.Name == "--add-seccomp-fd" {
			d.Seccomp = profile.Control{Where: "installed by bubblewrap from " + o.Operands[0], Reach: profile.Outside(), Why: profile.FilterStays}
			break
		}
	}
	if unsharesIn(opts, "net") {
		d.EgressBypass = "bwrap.args give the sandbox an empty network namespace of its own; the session's, which holds the ruleset, is never used"
		d.OwnNetwork = &profile.Control{Where: "an empty namespace of bwrap's own", Why: "the session's namespace is never used"}
	}
	if !unsharesIn(opts, "pid") {
		d.HostReach = append(d.HostReach, profile.HostAccess{Field: "bwrap.args", Why: "no --unshare-pid: the sandbox shares the host's pid namespace, and its root, the host's uid 0 in a user namespace, can signal the harness's processes"})
	}
	if !unsharesIn(opts, "ipc") {
		d.HostReach = append(d.HostReach, profile.HostAccess{Field: "bwrap.args", Why: "no --unshare-ipc: the sandbox shares the host's IPC namespace (the harness's shared memory)"})
	}
	return d
}

// caps is the capability set a path's processes start with.
func caps(p *profile.Profile, opts []option, path targets.Path) profile.CapSet {
	id := p.Identity(path)
	// On the normal path bubblewrap runs unprivileged, and then keeps
	// no capability even for uid 0 inside.
	if id.UID != 0 || path != targets.PathBreach {
		return profile.CapSet{}
	}
	if id.CapAdd != nil {
		return profile.CapsOf(id.CapAdd) // the target adds --cap-drop ALL, then these
	}
	s := profile.AllCaps() // bwrap keeps every capability for uid 0 in its user namespace
	for _, o := range opts {
		if o.Name == "--cap-drop" {
			if profile.CapBase(o.Operands[0]) == "ALL" {
				s = profile.CapSet{}
			}
			delete(s, profile.CapBase(o.Operands[0]))
		}
	}
	return s
}

// planHostUser: root on the assume-breach path, the run's own uid on
// the normal one.
func planHostUser(p *profile.Profile, path targets.Path) profile.HostUser {
	id := p.Identity(path)
	if path == targets.PathBreach {
		return profile.HostIDs(profile.HostRoot, 0, 0, fmt.Sprintf("host root (uid 0): bubblewrap runs as root on this path, so uid %d inside maps to host uid 0; root-owned files bound in are the sandbox's", id.UID))
	}
	return profile.HostUser{Kind: profile.HostRunUser, Text: fmt.Sprintf("this run's own unprivileged host uid and gid (%d + the run's pid, no account, no groups): bubblewrap runs as it, so uid %d inside maps to it, and it owns only the session's work folder and places", RunUIDBase, id.UID)}
}

// binds are the bind options of bwrap.args, in order.
func binds(opts []option) []profile.Bind {
	var out []profile.Bind
	for _, o := range opts {
		kind, ok := strings.CutPrefix(o.Name, "--")
		if !ok || !strings.Contains(kind, "bind") || strings.Contains(kind, "data") {
			continue
		}
		kind, optional := strings.CutSuffix(kind, "-try")
		out = append(out, profile.Bind{
			Type: "bind", Source: o.Operands[0], Target: o.Operands[1],
			ReadOnly: kind == "ro-bind", Devices: kind == "dev-bind", Optional: optional,
			Field: fmt.Sprintf("bwrap.args[%d]", o.Index),
		})
	}
	return out
}
