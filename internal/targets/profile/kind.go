package profile

import (
	"fmt"
	"strings"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// Kind is what one target adapter knows about the profiles of its target:
// the sections it reads, their checks, and where the target's controls
// live. Each adapter package defines its kinds (internal/targets/docker/dockerkind,
// internal/targets/exec, internal/targets/realwrap, internal/targets/bwrap); internal/targets/kinds lists
// them, and Load is given that list: a profile whose target names no kind
// in it is refused, never read as some default.
type Kind interface {
	// Name is the profile's `target:` value ("docker").
	Name() string
	// Sections are the top-level profile fields only this kind reads
	// ("docker", "workspace"), each with its type, which is the kind's
	// own; one set in a profile of another kind is refused.
	Sections() []Section
	// Load checks the kind's sections against the rest of the profile,
	// fills in what they leave to it (so the section a target gets is the
	// whole truth) and reads the files they name, through l.
	Load(l *Loading) error
	// Describe says where the kind's controls live for p, worked out from
	// the loaded profile alone.
	Describe(p *Profile) Description
}

// Referrer is a Kind whose sections hold {{place:NAME}} and
// {{secret:NAME}} references its target expands: References checks each
// through Loading.Reference, before the profile's own fields are.
type Referrer interface {
	References(l *Loading) error
}

// Checker is a Kind that refuses, when the profile is checked before a run
// (Profile.Check), what its target would refuse at every session start.
type Checker interface {
	Check(l *Loading) error
}

// Description is a kind's account of a profile: who the sandbox's user is,
// what it may do, and which of the profile's controls the guest can reach.
// The profile's plan, controls and host reach are made from it.
type Description struct {
	// Runtime names what runs the sandbox, for the plan.
	Runtime string
	// Caps is the capability set each path's processes start with.
	Caps map[targets.Path]CapSet
	// HostUser is who each path's user is on the host.
	HostUser map[targets.Path]HostUser
	// HostReach are the kind's own ways the guest reaches the host (the
	// network mode and the binds are the profile's, added by HostReach).
	HostReach []HostAccess
	// Binds are the profile's mounts, in the order the runtime applies
	// them: each with the field that says it.
	Binds []Bind
	// WholeHost: the sandbox is made from the host's own file system, so
	// every host path is exposed to it (Exposes).
	WholeHost bool
	// Wrapper is the wrapper command of a wrapper kind, nil for others.
	Wrapper *Wrapper
	// Words are the lists of words in the kind's section that its runtime
	// is given as written (bwrap.args, exec.argv): none may name the
	// harness's own folders.
	Words []Words
	// Env is what the kind's section adds to the sandbox's environment,
	// shown in the plan with the profile's env.
	Env map[string]string
	// PolicyField is where the profile names its policy files, for
	// messages ("exec.files"); "" means "target".
	PolicyField string

	// EgressBypass, when set, says why the egress ruleset does not govern
	// the sandbox's traffic.
	EgressBypass string
	// OwnNetwork, when set, says the sandbox never uses the session's
	// network namespace: its Where and Why, for the network control.
	OwnNetwork *Control
	// NetworkOutOfReach, when set, says why no path's root can change the
	// session namespace's network whatever its capabilities; empty, it is
	// CAP_NET_ADMIN that decides.
	NetworkOutOfReach string

	// IdentityWhere is where the identity and capabilities are set;
	// IdentityNote, if any, is added to the control's why.
	IdentityWhere, IdentityNote string
	// Mounts is the mounts control's Where; with Reach nil, CAP_SYS_ADMIN
	// over the mount namespace decides reach and why.
	Mounts Control
	// Seccomp is the seccomp filter control.
	Seccomp Control
	// Limits is the resource limits control, nil when there are none.
	Limits *Control

	// SecretInside, when set, refuses secret_process where: inside;
	// SecretOther refuses user: other.
	SecretInside, SecretOther string
}

// Words is a list of words a profile field gives a runtime.
type Words struct {
	Field string
	List  []string
}

// ErrOneUser is why a sandbox that maps one uid refuses a secret-holding
// process inside as another user (Description.SecretOther).
const ErrOneUser = "bubblewrap's --unshare-user maps one uid into the sandbox, so no other user can run inside it: run the process outside, or inside as the agent"

// Kinds is the list of kinds Load knows, in the order messages list them.
type Kinds []Kind

// find returns the kind named name.
func (ks Kinds) find(name string) (Kind, bool) {
	for _, k := range ks {
		if k.Name() == name {
			return k, true
		}
	}
	return nil, false
}

// owners names, in order, the kinds that read section.
func (ks Kinds) owners(section string) []string {
	var out []string
	for _, k := range ks {
		if owns(k, section) {
			out = append(out, k.Name())
		}
	}
	return out
}

func (ks Kinds) names() string {
	var out []string
	for _, k := range ks {
		out = append(out, k.Name())
	}
	return strings.Join(out, ", ")
}

func owns(k Kind, section string) bool {
	if k == nil {
		return false
	}
	for _, s := range k.Sections() {
		if s.Name == section {
			return true
		}
	}
	return false
}

// Kind returns the profile's kind; nil for a Profile not made by Load.
func (p *Profile) Kind() Kind { return p.kind }

// describe is the kind's description of p; a Profile not made by Load
// (a literal in a test) has no kind and an empty description.
func (p *Profile) describe() Description {
	if p.kind == nil {
		return Description{}
	}
	return p.kind.Describe(p)
}

// caps is the capability set a path's processes start with.
func (p *Profile) caps(path targets.Path) CapSet {
	return p.describe().Caps[path]
}

// Loading is a profile being loaded, as a kind sees it: the profile, and
// errors and files named by the profile's own fields and lines.
type Loading struct{ v *validator }

// Profile is the profile being loaded.
func (l *Loading) Profile() *Profile { return l.v.p }

// Fail is err at field (a dotted path: "docker.mounts[2].source"), with
// the line it is on.
func (l *Loading) Fail(field string, err error) error { return l.v.fail(field, err) }

// FailItem is Fail for item i of the list at field, at that item's line.
func (l *Loading) FailItem(field string, i int, err error) error { return l.v.failItem(field, i, err) }

// ReadFile reads a file named relative to the profile, records it with
// the profile's files and returns its key in Files.
func (l *Loading) ReadFile(name string) (string, error) { return l.v.readRef(name) }

// SetWrapperFiles records a wrapper's {{file:NAME}} names and their keys in
// Files (Profile.WrapperFiles).
func (l *Loading) SetWrapperFiles(m map[string]string) { l.v.p.facts.wrapFiles = m }

// WrapperFiles maps a wrapper's {{file:NAME}} names to their keys in Files.
func (p *Profile) WrapperFiles() map[string]string { return p.facts.wrapFiles }

// sections refuses a section set in a profile whose kind does not read it.
func (v *validator) sections(ks Kinds) error {
	p := v.p
	secs, err := ks.sectionTypes()
	if err != nil {
		return err
	}
	for _, s := range secs {
		if !set(p.sections[s.Name]) || owns(p.kind, s.Name) {
			continue
		}
		owners := ks.owners(s.Name)
		if s.Elsewhere != nil {
			return v.fail(s.Name, s.Elsewhere(owners, p.Target))
		}
		return v.fail(s.Name, fmt.Errorf("only for target %s (target is %s)", ownersText(owners), p.Target))
	}
	return nil
}
