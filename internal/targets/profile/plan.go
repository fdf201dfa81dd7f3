package profile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/targets/egress"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// Plan is what a run of a profile will do, worked out without running
// anything: `gatehouse run --check` prints it, and a run prints it first
// and records it. Its JSON form is documented in docs/profiles.md.
type Plan struct {
	Profile      string            `json:"profile"`
	File         string            `json:"file"`
	PolicyDigest string            `json:"policy_digest"`
	Target       string            `json:"target"`
	Runtime      string            `json:"runtime"`
	Network      string            `json:"network"`
	Resolver     string            `json:"resolver,omitempty"` // "" = the lab's
	Egress       *EgressPlan       `json:"egress"`             // null: no ruleset
	Paths        []PathPlan        `json:"paths"`
	Binds        []Bind            `json:"binds"`
	Env          map[string]string `json:"env"` // as written: secrets stay {{secret:NAME}}
	References   []Reference       `json:"references"`
	Gates        []string          `json:"gates"`
	Stop         StopPlan          `json:"stop"`
	// SecretProcess is where the platform's secret-holding process runs:
	// "none", "outside", "inside as agent", "inside as other".
	SecretProcess string    `json:"secret_process"`
	Controls      []Control `json:"controls"`
	Warnings      []Warning `json:"warnings"`
}

// EgressPlan is the profile's nftables ruleset.
type EgressPlan struct {
	File    string   `json:"file"`
	Digest  string   `json:"digest"`  // sha256 of the file's bytes
	Tables  []string `json:"tables"`  // "inet gatehouse_egress"
	Checked bool     `json:"checked"` // nft -c accepted it on this machine
	Applies bool     `json:"applies"` // it governs the sandbox's traffic
	Why     string   `json:"why"`
}

// PathPlan is who the sandbox runs as on one path: inside, and on the host.
type PathPlan struct {
	Path         string   `json:"path"`
	UID          int      `json:"uid"`
	GID          int      `json:"gid"`
	Capabilities string   `json:"capabilities"` // "none", "all" or CAP_A,CAP_B
	HostUser     HostUser `json:"host_user"`
}

// Reference is one {{place:NAME}} or {{secret:NAME}} the profile names.
type Reference struct {
	Ref string `json:"ref"` // e.g. "place:storage"
	Doc string `json:"doc"` // what the harness puts there
}

// StopPlan is how a session is stopped.
type StopPlan struct {
	Limit   string   `json:"limit"` // the session must have stopped acting by then
	Scope   string   `json:"scope"` // session | process
	Command []string `json:"command,omitempty"`
}

// NewPlan works out the plan of a run of gates (each on both paths).
// checked says Check passed on this machine.
func NewPlan(p *Profile, gates []string, checked bool) Plan {
	pl := Plan{
		Profile: p.Name, File: p.source, PolicyDigest: p.Digest(), Target: p.Target,
		Runtime: p.runtime(), Network: string(p.Network), Resolver: p.Resolver,
		Binds: p.Binds(), Env: map[string]string{}, Gates: append([]string{}, gates...),
		Stop:          StopPlan{Limit: p.StopGrace().String(), Scope: string(p.Scope()), Command: p.Limits.StopCommand},
		SecretProcess: p.SecretProcess.String(),
		Warnings:      append(p.Warnings(), p.accountWarnings()...),
	}
	// Empty lists, not null: the JSON schema has arrays there.
	if pl.Binds == nil {
		pl.Binds = []Bind{}
	}
	if pl.Warnings == nil {
		pl.Warnings = []Warning{}
	}
	pl.References = []Reference{}
	for k, v := range p.Env {
		pl.Env[k] = shownValue(k, v)
	}
	for k, v := range p.describe().Env {
		pl.Env[k] = shownValue(k, v)
	}
	for _, r := range p.facts.refs {
		pl.References = append(pl.References, Reference{Ref: r, Doc: refDoc(r)})
	}
	for _, path := range []targets.Path{targets.PathNormal, targets.PathBreach} {
		id := p.Identity(path)
		pl.Paths = append(pl.Paths, PathPlan{Path: string(path), UID: id.UID, GID: id.GID, Capabilities: p.caps(path).String(), HostUser: p.HostUser(path)})
	}
	if p.Egress != "" {
		rules := p.files[p.Egress]
		sum := sha256.Sum256(rules)
		e := &EgressPlan{File: p.Egress, Digest: "sha256:" + hex.EncodeToString(sum[:]), Checked: checked}
		for _, t := range egress.Tables(rules) {
			e.Tables = append(e.Tables, t.Family+" "+t.Name)
		}
		e.Applies, e.Why = p.egressApplies()
		pl.Egress = e
	}
	pl.Controls = p.controls()
	return pl
}

func (p *Profile) runtime() string { return p.describe().Runtime }

func refDoc(ref string) string {
	kind, name, _ := strings.Cut(ref, ":")
	list := targets.ProvidedPlaces()
	if kind == "secret" {
		list = targets.ProvidedSecrets()
	}
	for _, p := range list {
		if p.Name == name {
			return p.Doc
		}
	}
	return ""
}

var secretName = regexp.MustCompile(`(?i)(TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|AUTH)`)

// ShownEnv is the profile's env value for name, fit to print or record:
// what the plan shows, and what a target's read-back argv records instead
// of the expanded value. ok is false when the value is shown as it is.
func (p *Profile) ShownEnv(name string) (shown string, redacted bool) {
	v, ok := p.Env[name]
	if !ok {
		return "", false
	}
	shown = shownValue(name, v)
	return shown, shown != v
}

// shownValue is an environment value fit to print: references stay as
// written (they name canaries, not values); a literal under a name that
// says it is a credential is not printed, since it may be a real one.
func shownValue(k, v string) string {
	if !secretName.MatchString(k) || refRE.ReplaceAllString(v, "") == "" || strings.HasPrefix(v, "/") {
		return v // no credential's name, only references, or a path (SSH_AUTH_SOCK)
	}
	if (strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://")) && !strings.Contains(v, "@") {
		return v // an endpoint without userinfo, e.g. GATEHOUSE_BROKER_URL
	}
	return fmt.Sprintf("<literal value, %d characters, not printed>", len(v))
}
