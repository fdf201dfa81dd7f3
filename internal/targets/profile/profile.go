// Package profile reads sandbox profiles: the YAML file a team writes to say
// exactly how its sandbox is configured (runtime arguments, network, egress
// ruleset, users), plus every file it references. The bytes of all of them
// are kept so the evidence can record the policy that was really in force.
package profile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// Profile is one decoded profile. Fields mirror the YAML schema documented
// in docs/profiles.md, but for the sections only some kinds read (bwrap,
// docker, ...): their types are their kinds' own (Section, SectionOf).
type Profile struct {
	Name        string            `yaml:"name"`
	Target      string            `yaml:"target"`
	Description string            `yaml:"description"`
	Network     Network           `yaml:"network"`
	Egress      string            `yaml:"egress"`   // nftables file, relative to the profile
	Resolver    string            `yaml:"resolver"` // what /etc/resolv.conf names inside
	Env         map[string]string `yaml:"env"`
	Paths       Paths             `yaml:"paths"`
	Limits      Limits            `yaml:"limits"`
	// SecretProcess says where the platform runs a process holding a secret
	// in its environment (a tool server started with an API key, the agent
	// runtime itself) and as whom. Gatehouse then plants one there and checks
	// whether the agent can read it; without it that place is not tested
	// (and the result says so).
	SecretProcess SecretProcess `yaml:"secret_process"`
	// Allow says what the allowed destination may receive (allow.go):
	// absent, what it receives is a finding; present, a contact outside it
	// FAILs external-callback.
	Allow Allow `yaml:"allow"`

	source string            // the file name as the caller gave it
	main   string            // the profile's own key in files
	files  map[string][]byte // key: path relative to the profile's folder
	refs   map[int]string    // index in the kind's argument list -> key in files
	facts  facts             // what the loader worked out, for Check, Binds and Plan
	kind   Kind              // the target's kind, from the kinds Load was given
	// sections are the kinds' sections as decoded (name -> pointer to
	// the kind's type), read through SectionOf.
	sections map[string]any
}

// SecretProcess is where the platform's secret-holding process runs.
// The zero value means the platform runs none (nothing is planted).
type SecretProcess struct {
	// Where: "inside" the session's sandbox (a child of its init, sharing
	// its namespaces) or "outside" it (on the host, as root, as a platform
	// daemon would run).
	Where string `yaml:"where"`
	// User, inside only: "agent" (the path's own uid) or "other" (a uid of
	// its own, OtherUser, which the target must support).
	User string `yaml:"user"`
}

// Where the secret-holding process runs, and as whom.
const (
	SecretInside  = "inside"
	SecretOutside = "outside"
	SecretAgent   = "agent"
	SecretOther   = "other"
	// OtherUser is the uid:gid of a secret-holding process "inside as
	// another user": neither path's identity.
	OtherUser = "61000:61000"
)

// Planted reports whether the profile says there is such a process.
func (s SecretProcess) Planted() bool { return s.Where != "" }

// String is how plans and findings name it.
func (s SecretProcess) String() string {
	switch {
	case s.Where == "":
		return "none"
	case s.User != "":
		return s.Where + " as " + s.User
	}
	return s.Where
}

// Network says where a session's traffic goes.
type Network string

const (
	// NetworkLab: a session namespace of its own, joined to the lab.
	NetworkLab Network = "lab"
	// NetworkNone: no network at all (the sandbox must unshare it).
	NetworkNone Network = "none"
	// NetworkHost: the lab namespace itself, never the machine's own.
	NetworkHost Network = "host"
)

// Paths gives the identity for each of the two paths.
type Paths struct {
	Normal Identity `yaml:"normal"`
	Breach Identity `yaml:"assume-breach"`
}

// Identity is who commands run as. CapAdd nil means "the runtime's default
// capabilities for that uid"; a non-nil list (even empty, `cap_add: []`)
// means "exactly these capabilities, nothing else".
type Identity struct {
	UID    int      `yaml:"uid"`
	GID    int      `yaml:"gid"`
	CapAdd []string `yaml:"cap_add"`
}

// Limits bounds a session.
type Limits struct {
	// Stop is the stop limit: how soon after a stop the session must have
	// stopped acting (the stop-signal gate's limit), and, for stop scope
	// "process", how long the commands get between SIGTERM and SIGKILL.
	Stop time.Duration `yaml:"stop"`
	// StopScope is what Stop ends: "session" (the default) every process
	// of the session, however it left its process group; "process" only
	// the command's own process group, the careless stop that the
	// stop-signal gate must catch. The harness's own teardown (Reap) ends
	// everything either way.
	StopScope StopScope `yaml:"stop_scope"`
	// StopCommand is the platform's own stop, for platforms that have one
	// (an API call, a CLI): argv run on the host when the stop-signal gate
	// stops a session, before the target's Stop. It gets GATEHOUSE_SESSION,
	// GATEHOUSE_NETNS and GATEHOUSE_TARGET in its environment.
	StopCommand []string `yaml:"stop_command"`
	// Temporary are host paths (absolute, or {{place:NAME}} references)
	// the platform's stop removes, such as a scratch volume made for the
	// session: the stop-signal gate FAILs when one is still there after
	// the stop. Read-write folders of the team's own (a project checkout)
	// outliving a stop are normal and do not belong here.
	Temporary []string `yaml:"temporary"`
}

// StopScope is how far a target's Stop reaches.
type StopScope string

const (
	StopSession StopScope = "session"
	StopProcess StopScope = "process"
)

// Scope returns Limits.StopScope or StopSession.
func (p *Profile) Scope() StopScope {
	if p.Limits.StopScope == "" {
		return StopSession
	}
	return p.Limits.StopScope
}

// DefaultStop is the stop grace period when the profile names none.
const DefaultStop = 5 * time.Second

// StopGrace returns Limits.Stop or DefaultStop.
func (p *Profile) StopGrace() time.Duration {
	if p.Limits.Stop > 0 {
		return p.Limits.Stop
	}
	return DefaultStop
}

// Identity returns the identity for a path.
func (p *Profile) Identity(path targets.Path) Identity {
	if path == targets.PathBreach {
		return p.Paths.Breach
	}
	return p.Paths.Normal
}

// Source is the file name the profile was loaded from.
func (p *Profile) Source() string { return p.source }

// Files returns a copy of every file the profile consists of, keyed by its
// path relative to the profile's folder: the profile itself, the egress
// ruleset and any file its bwrap arguments name.
func (p *Profile) Files() map[string][]byte {
	out := make(map[string][]byte, len(p.files))
	for k, v := range p.files {
		out[k] = append([]byte(nil), v...)
	}
	return out
}

// File returns one file's bytes by its key in Files.
func (p *Profile) File(name string) ([]byte, bool) {
	b, ok := p.files[name]
	return b, ok
}

// EgressRules is the ruleset file the profile's egress names, fetched in
// one place for every target: a name with no loaded file is an error,
// never an empty ruleset applied as if it were the policy.
func (p *Profile) EgressRules() ([]byte, error) {
	if p.Egress == "" {
		return nil, nil
	}
	b, ok := p.files[p.Egress]
	if !ok {
		return nil, fmt.Errorf("profile %s: egress ruleset %q was not loaded with the profile", p.Name, p.Egress)
	}
	return b, nil
}

// ArgFile reports whether argument i of the kind's section names a
// profile file (Loading.RecordArgFile), and its key.
func (p *Profile) ArgFile(i int) (string, bool) {
	k, ok := p.refs[i]
	return k, ok
}

// Listing is the "<sha256 hex>  <name>" line of every file, sorted by name:
// the listing `sha256sum` prints, so an auditor can recheck it with
// standard tools from the recorded files.
func (p *Profile) Listing() string {
	names := make([]string, 0, len(p.files))
	for n := range p.files {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		sum := sha256.Sum256(p.files[n])
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(sum[:]), n)
	}
	return b.String()
}

// Digest is "sha256:" + the sha256 of Listing: one value naming the whole
// policy, which changes when any of its files changes.
func (p *Profile) Digest() string {
	sum := sha256.Sum256([]byte(p.Listing()))
	return "sha256:" + hex.EncodeToString(sum[:])
}
