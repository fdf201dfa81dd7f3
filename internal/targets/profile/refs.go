package profile

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// facts are what the loader worked out beyond the decoded fields.
type facts struct {
	refs     []string // "place:NAME" and "secret:NAME" the profile names, sorted
	warnings []Warning
	// wrapFiles: exec/firejail {{file:NAME}} -> key in files
	wrapFiles map[string]string
}

// symbolic is a Spec whose places and secrets expand to their own
// references, so targets.Expand checks a string exactly as a session start
// would, and leaves it as written (the plan's "symbolic expansion").
func symbolic(hasLab bool) targets.Spec {
	s := targets.Spec{Places: map[string]string{}, Secrets: map[string]string{}}
	for _, p := range targets.ProvidedPlaces() {
		if hasLab || !p.NeedsLab {
			s.Places[p.Name] = "{{place:" + p.Name + "}}"
		}
	}
	for _, p := range targets.ProvidedSecrets() {
		if hasLab || !p.NeedsLab {
			s.Secrets[p.Name] = "{{secret:" + p.Name + "}}"
		}
	}
	return s
}

var refRE = regexp.MustCompile(`\{\{([^{}]*)\}\}`)

// references checks every {{place:NAME}} and {{secret:NAME}} where targets
// expand them (the kind's sections, env, limits.temporary) against what a
// run provides, and refuses them where nothing expands them.
func (v *validator) references() error {
	p := v.p
	v.refs = refCheck{hasLab: p.Network != NetworkNone, spec: symbolic(p.Network != NetworkNone), seen: map[string]bool{}}
	check := v.refs.check
	if r, ok := p.kind.(Referrer); ok {
		if err := r.References(&Loading{v}); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(p.Env) {
		if err := check(p.Env[k]); err != nil {
			return v.fail("env."+k, err)
		}
	}
	for i, t := range p.Limits.Temporary {
		if strings.Contains(t, "{{secret:") {
			return v.fail(fmt.Sprintf("limits.temporary[%d]", i), fmt.Errorf("%q: a path, not a secret", t))
		}
		if err := check(t); err != nil {
			return v.fail(fmt.Sprintf("limits.temporary[%d]", i), err)
		}
	}
	for _, a := range p.Limits.StopCommand {
		if strings.Contains(a, "{{") {
			return v.fail("limits.stop_command", fmt.Errorf("%q: references are not expanded here; the command gets GATEHOUSE_SESSION, GATEHOUSE_NETNS and GATEHOUSE_TARGET", a))
		}
	}
	for r := range v.refs.seen {
		p.facts.refs = append(p.facts.refs, r)
	}
	sort.Strings(p.facts.refs)
	return nil
}

// refCheck is the references check of one Load: what a run provides,
// and the references seen so far.
type refCheck struct {
	hasLab bool
	spec   targets.Spec
	seen   map[string]bool
}

// check refuses a reference in s that a run would not expand, and
// records the ones it would.
func (c *refCheck) check(s string) error {
	for _, m := range refRE.FindAllStringSubmatch(s, -1) {
		kind, name, _ := strings.Cut(m[1], ":")
		if !c.hasLab && needsLab(kind, name) {
			return fmt.Errorf("{{%s}} is provided only with a lab (network lab or host); this profile has network none", m[1])
		}
		c.seen[m[1]] = true
	}
	_, err := targets.Expand(s, c.spec)
	return err
}

// Reference checks the references in s, a value of the kind's section
// that its target expands as a session starts (Referrer), as that start
// would, and records them for the plan. Only References may call it.
func (l *Loading) Reference(s string) error { return l.v.refs.check(s) }

func needsLab(kind, name string) bool {
	list := targets.ProvidedPlaces()
	if kind == "secret" {
		list = targets.ProvidedSecrets()
	}
	for _, p := range list {
		if p.Name == name {
			return p.NeedsLab
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
