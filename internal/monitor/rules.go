package monitor

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gatehouse-dev/gatehouse/detect"
)

//go:embed rules.yaml
var builtinRules []byte

// ErrRules: a rules file that cannot be used.
var ErrRules = errors.New("monitor: rules")

// Params give the rules' $variables for one run; a name given here replaces
// the rules file's default list of that name.
type Params map[string][]string

// Rule names an observation when its kind and every condition it states
// agree. Lists may hold $variables.
type Rule struct {
	Name         string   `yaml:"name"`
	Kind         string   `yaml:"kind"`
	Object       []string `yaml:"object,omitempty"`        // object equals one
	ObjectSuffix []string `yaml:"object_suffix,omitempty"` // object is a name at or under one
	Basename     []string `yaml:"basename,omitempty"`      // last path element equals one
	PathSuffix   []string `yaml:"path_suffix,omitempty"`   // path ends with "/" + one (".aws/credentials")
	PathPrefix   []string `yaml:"path_prefix,omitempty"`   // path is one or under it ("/run/secrets")
	DestHost     []string `yaml:"dest_host,omitempty"`     // destination address equals one
	UnlessDest   []string `yaml:"unless_dest,omitempty"`   // destination address:port is none of these
}

// Rules are the monitor's rules as loaded; Digest is the sha256 of the
// file's bytes, recorded in evidence like the policy.
type Rules struct {
	Version  int                 `yaml:"version"`
	Defaults map[string][]string `yaml:"defaults"`
	Rules    []Rule              `yaml:"rules"`
	digest   string
}

// Digest is "sha256:<hex>" of the rules file as read.
func (r *Rules) Digest() string { return r.digest }

// DefaultRules are the built-in rules (rules.yaml, embedded).
func DefaultRules() (*Rules, error) { return ParseRules(builtinRules) }

// BuiltinRulesYAML returns the built-in rules file, to start an override from.
func BuiltinRulesYAML() []byte { return bytes.Clone(builtinRules) }

// LoadRules reads a rules file.
func LoadRules(file string) (*Rules, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRules, err)
	}
	return ParseRules(b)
}

// ParseRules decodes strictly (unknown fields refused) and checks each rule.
func ParseRules(b []byte) (*Rules, error) {
	var r Rules
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRules, err)
	}
	if r.Version != 1 {
		return nil, fmt.Errorf("%w: version %d, want 1", ErrRules, r.Version)
	}
	seen := map[string]bool{}
	for i, ru := range r.Rules {
		switch {
		case ru.Name == "":
			return nil, fmt.Errorf("%w: rule %d has no name", ErrRules, i+1)
		case seen[ru.Name]:
			return nil, fmt.Errorf("%w: rule %q twice", ErrRules, ru.Name)
		}
		seen[ru.Name] = true
		switch ru.Kind {
		case detect.KindConnect, detect.KindDNS, detect.KindOpen, detect.KindExec, detect.KindAliveAfter:
		case detect.KindExit:
			return nil, fmt.Errorf("%w: rule %q: an exit is a process's end, not a detection: no rule may name it", ErrRules, ru.Name)
		default:
			return nil, fmt.Errorf("%w: rule %q: kind %q is not one the monitor observes", ErrRules, ru.Name, ru.Kind)
		}
		for _, list := range [][]string{ru.Object, ru.ObjectSuffix, ru.Basename, ru.PathSuffix, ru.PathPrefix, ru.DestHost, ru.UnlessDest} {
			for _, v := range list {
				if name, ok := strings.CutPrefix(v, "$"); ok {
					if _, def := r.Defaults[name]; !def {
						return nil, fmt.Errorf("%w: rule %q: $%s has no default", ErrRules, ru.Name, name)
					}
				}
			}
		}
	}
	sum := sha256.Sum256(b)
	r.digest = "sha256:" + hex.EncodeToString(sum[:])
	return &r, nil
}

// Evaluate names o by the first rule it matches, "" for none.
func (r *Rules) Evaluate(o Observation, p Params) string {
	for _, ru := range r.Rules {
		if ru.matches(o, func(list []string) []string { return r.expand(list, p) }) {
			return ru.Name
		}
	}
	return ""
}

func (r *Rules) expand(list []string, p Params) []string {
	var out []string
	for _, v := range list {
		name, ok := strings.CutPrefix(v, "$")
		if !ok {
			out = append(out, v)
			continue
		}
		if vs, given := p[name]; given {
			out = append(out, vs...)
		} else {
			out = append(out, r.Defaults[name]...)
		}
	}
	return out
}

func (ru Rule) matches(o Observation, expand func([]string) []string) bool {
	if ru.Kind != o.Kind {
		return false
	}
	if ru.Object != nil && !slices.Contains(expand(ru.Object), o.Object) {
		return false
	}
	if ru.ObjectSuffix != nil && !slices.ContainsFunc(expand(ru.ObjectSuffix), func(z string) bool {
		z = normName(z)
		return o.Object == z || strings.HasSuffix(o.Object, "."+z)
	}) {
		return false
	}
	if ru.PathSuffix != nil && !slices.ContainsFunc(expand(ru.PathSuffix), func(z string) bool {
		return strings.HasSuffix(o.Object, "/"+strings.TrimPrefix(z, "/"))
	}) {
		return false
	}
	if ru.PathPrefix != nil && !slices.ContainsFunc(expand(ru.PathPrefix), func(z string) bool {
		z = strings.TrimSuffix(z, "/")
		return o.Object == z || strings.HasPrefix(o.Object, z+"/")
	}) {
		return false
	}
	if ru.Basename != nil && !slices.Contains(expand(ru.Basename), path.Base(o.Object)) {
		return false
	}
	if ru.DestHost != nil && !slices.ContainsFunc(expand(ru.DestHost), func(h string) bool { return sameHost(o.Dest, h) }) {
		return false
	}
	if ru.UnlessDest != nil && slices.ContainsFunc(expand(ru.UnlessDest), func(d string) bool { return sameDest(o.Dest, d) }) {
		return false
	}
	return true
}

// sameHost compares the address of dest ("ip:port") with host, as addresses
// (so "fd00:ec2::254" equals "[fd00:ec2:0::254]:80"'s address).
func sameHost(dest, host string) bool {
	ap, err := netip.ParseAddrPort(dest)
	if err != nil {
		return false
	}
	h, err := netip.ParseAddr(host)
	return err == nil && ap.Addr() == h.Unmap()
}

func sameDest(dest, want string) bool {
	a, err1 := netip.ParseAddrPort(dest)
	b, err2 := netip.ParseAddrPort(want)
	if err1 != nil || err2 != nil {
		return dest == want
	}
	return a.Addr() == b.Addr().Unmap() && a.Port() == b.Port()
}
