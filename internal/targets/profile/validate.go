package profile

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// validator checks what strict decoding cannot, and reads referenced files.
type validator struct {
	p       *Profile
	root    *yaml.Node
	fsys    fs.FS
	dir     string // the profile's folder inside fsys
	hostDir string // the same folder on disk, "" for non-disk file systems
	file    string
	kinds   Kinds    // what Load was given
	refs    refCheck // the references check, during references
}

var (
	capName    = regexp.MustCompile(`^(CAP_[A-Z0-9_]+|ALL)$`)
	nftInclude = regexp.MustCompile(`(?m)^\s*include\s`)
)

func (v *validator) run() error {
	p := v.p
	for _, f := range []struct{ key, val string }{{"name", p.Name}, {"target", p.Target}, {"network", string(p.Network)}} {
		if f.val == "" {
			return v.fail(f.key, errors.New("required"))
		}
	}
	k, ok := v.kinds.find(p.Target)
	if !ok {
		return v.fail("target", fmt.Errorf("%q is not a known target; known targets: %s", p.Target, v.kinds.names()))
	}
	p.kind = k
	if p.Egress != "" {
		if p.Network != NetworkLab {
			// In "host" mode the ruleset would filter the lab itself.
			return v.fail("egress", fmt.Errorf("needs network: lab (network is %s)", p.Network))
		}
		key, err := v.readRef(p.Egress)
		if err != nil {
			return v.fail("egress", err)
		}
		if nftInclude.Match(v.p.files[key]) {
			// The recorded bytes must be the whole policy.
			return v.fail("egress", errors.New("include statements are not allowed; put the rules in this one file"))
		}
	}
	if p.Resolver != "" {
		if err := resolverAddr(p.Resolver); err != nil {
			return v.fail("resolver", err)
		}
	}
	for k := range p.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return v.fail("env", fmt.Errorf("bad variable name %q", k))
		}
	}
	for _, section := range []string{"normal", "assume-breach"} {
		for _, k := range []string{"uid", "gid"} {
			if _, val := v.node("paths", section, k); val == nil {
				return v.fail("paths."+section+"."+k, errors.New("required"))
			}
		}
	}
	for i, id := range []Identity{p.Paths.Normal, p.Paths.Breach} {
		section := []string{"normal", "assume-breach"}[i]
		if id.UID < 0 || id.GID < 0 {
			return v.fail("paths."+section, errors.New("uid and gid must not be negative"))
		}
		for _, c := range id.CapAdd {
			if !capName.MatchString(c) || !KnownCap(c) {
				return v.fail("paths."+section+".cap_add", fmt.Errorf("%q is not a capability name like CAP_NET_RAW", c))
			}
		}
	}
	if p.Limits.Stop < 0 {
		return v.fail("limits.stop", errors.New("must not be negative"))
	}
	for i, t := range p.Limits.Temporary {
		if !strings.HasPrefix(t, "/") && !strings.HasPrefix(t, "{{place:") {
			return v.fail(fmt.Sprintf("limits.temporary[%d]", i), fmt.Errorf("%q is not an absolute host path or a {{place:NAME}} path", t))
		}
	}
	if sc := p.Limits.StopScope; sc != "" && sc != StopSession && sc != StopProcess {
		return v.fail("limits.stop_scope", fmt.Errorf("%q is not session or process", sc))
	}
	if err := v.secretProcess(); err != nil {
		return err
	}
	if err := v.sections(v.kinds); err != nil {
		return err
	}
	if err := p.kind.Load(&Loading{v}); err != nil {
		return err
	}
	if len(p.Limits.StopCommand) > 0 && p.Limits.StopCommand[0] == "" {
		return v.fail("limits.stop_command", errors.New("the command's first word is empty"))
	}
	if err := v.harness(); err != nil {
		return err
	}
	if err := v.references(); err != nil {
		return err
	}
	v.p.facts.warnings = append(v.bindWarnings(), v.egressWarnings()...)
	return nil
}

// resolverAddr accepts an address a resolv.conf nameserver can name: a
// unicast IP (loopback too: a filtering stub on 127.0.0.1 is a real setup).
func resolverAddr(s string) error {
	a, err := netip.ParseAddr(s)
	switch {
	case err != nil:
		return fmt.Errorf("not an IP address: %q", s)
	case a.Zone() != "":
		return fmt.Errorf("%q: a zone is not allowed in resolv.conf", s)
	case a.IsUnspecified(), a.IsMulticast(), a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return fmt.Errorf("%q is not a unicast address a resolver can listen on", s)
	}
	return nil
}

// readRef reads a file named relative to the profile and records it.
func (v *validator) readRef(name string) (string, error) {
	clean := path.Clean(filepath.ToSlash(name))
	if !filepath.IsLocal(clean) {
		return "", fmt.Errorf("%q must be a file next to the profile", name)
	}
	data, err := fs.ReadFile(v.fsys, path.Join(v.dir, clean))
	if err != nil {
		return "", err
	}
	v.p.files[clean] = data
	return clean, nil
}

func (v *validator) fail(field string, err error) error {
	return &Error{File: v.file, Line: v.line(field), Field: field, Err: err}
}

// failItem is fail for one item of a list, at that item's line.
func (v *validator) failItem(field string, i int, err error) error {
	return &Error{File: v.file, Line: v.line(fmt.Sprintf("%s[%d]", field, i)), Field: field, Err: err}
}

// line is the line of a dotted field path ("docker.mounts[2].source"), or
// of the nearest enclosing field that exists; 0 when none does.
func (v *validator) line(field string) int {
	keys := strings.Split(field, ".")
	for ; len(keys) > 0; keys = keys[:len(keys)-1] {
		if k, _ := v.node(keys...); k != nil {
			return k.Line
		}
	}
	return 0
}

// node returns the key (or, for an index, the item) and the value node at a
// path of mapping keys, each optionally indexed: "args[3]".
func (v *validator) node(keys ...string) (key, val *yaml.Node) {
	n := v.root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, want := range keys {
		name, idx := want, -1
		if m := indexed.FindStringSubmatch(want); m != nil {
			name = m[1]
			idx, _ = strconv.Atoi(m[2])
		}
		if n == nil || n.Kind != yaml.MappingNode {
			return nil, nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == name {
				key, next = n.Content[i], n.Content[i+1]
			}
		}
		if next == nil {
			return nil, nil
		}
		if idx >= 0 {
			if next.Kind != yaml.SequenceNode || idx >= len(next.Content) {
				return nil, nil
			}
			next = next.Content[idx]
			key = next
		}
		n = next
	}
	return key, n
}

func (v *validator) secretProcess() error {
	sp := v.p.SecretProcess
	switch sp.Where {
	case "":
		if sp.User != "" {
			return v.fail("secret_process.where", errors.New("required with user: inside or outside"))
		}
	case SecretOutside:
		if sp.User != "" {
			return v.fail("secret_process.user", errors.New("only for where: inside (outside, it runs as root on the host)"))
		}
	case SecretInside:
		d := v.p.describe()
		if d.SecretInside != "" {
			return v.fail("secret_process.where", errors.New(d.SecretInside))
		}
		switch sp.User {
		case SecretAgent:
		case SecretOther:
			if d.SecretOther != "" {
				return v.fail("secret_process.user", errors.New(d.SecretOther))
			}
		case "":
			return v.fail("secret_process.user", errors.New("required with where: inside: agent (the path's own uid) or other"))
		default:
			return v.fail("secret_process.user", fmt.Errorf("%q is not agent or other", sp.User))
		}
	default:
		return v.fail("secret_process.where", fmt.Errorf("%q is not inside or outside", sp.Where))
	}
	return nil
}

var indexed = regexp.MustCompile(`^(.*)\[(\d+)\]$`)
