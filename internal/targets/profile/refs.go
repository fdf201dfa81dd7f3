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
// expand them (bwrap.args, env, docker mount sources, docker.env) against
// what a run provides, and refuses them where nothing expands them.
func (v *validator) references() error {
	p := v.p
	hasLab := p.Network != NetworkNone
	spec := symbolic(hasLab)
	seen := map[string]bool{}
	check := func(s string) error {
		for _, m := range refRE.FindAllStringSubmatch(s, -1) {
			kind, name, _ := strings.Cut(m[1], ":")
			if !hasLab && needsLab(kind, name) {
				return fmt.Errorf("{{%s}} is provided only with a lab (network lab or host); this profile has network none", m[1])
			}
			seen[m[1]] = true
		}
		_, err := targets.Expand(s, spec)
		return err
	}
	for i, a := range p.Bwrap.Args {
		if err := check(a); err != nil {
			return v.failItem("bwrap.args", i, fmt.Errorf("bwrap.args[%d]: %w", i, err))
		}
	}
	// Only the kind's own section is set (sections): exec.argv or
	// firejail.args, a wrapper's. Its own references were checked by the
	// kind's Load.
	for _, w := range []struct {
		field string
		args  []string
	}{{"exec.argv", p.Exec.Argv}, {"firejail.args", p.Firejail.Args}} {
		for i, a := range w.args {
			if err := check(WrapperRef.ReplaceAllString(a, "")); err != nil {
				return v.failItem(w.field, i, fmt.Errorf("[%d]: %w", i, err))
			}
		}
	}
	for _, k := range sortedKeys(p.Env) {
		if err := check(p.Env[k]); err != nil {
			return v.fail("env."+k, err)
		}
	}
	for _, k := range sortedKeys(p.Docker.Env) {
		if err := check(p.Docker.Env[k]); err != nil {
			return v.fail("docker.env."+k, err)
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
	for i, m := range p.Docker.Mounts {
		if err := check(m.Source); err != nil {
			return v.fail(fmt.Sprintf("docker.mounts[%d].source", i), err)
		}
		if strings.Contains(m.Target, "{{") {
			return v.fail(fmt.Sprintf("docker.mounts[%d].target", i), fmt.Errorf("%q: references are expanded in mount sources only", m.Target))
		}
	}
	for _, a := range p.Limits.StopCommand {
		if strings.Contains(a, "{{") {
			return v.fail("limits.stop_command", fmt.Errorf("%q: references are not expanded here; the command gets GATEHOUSE_SESSION, GATEHOUSE_NETNS and GATEHOUSE_TARGET", a))
		}
	}
	for r := range seen {
		p.facts.refs = append(p.facts.refs, r)
	}
	sort.Strings(p.facts.refs)
	return nil
}

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
