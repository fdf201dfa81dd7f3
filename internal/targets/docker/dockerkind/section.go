package dockerkind

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/targets/docker"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// SectionName is the docker section's key, read by both kinds.
const SectionName = "docker"

// SpecOf is p's docker section, completed by Load: the spec the target
// gets.
func SpecOf(p *profile.Profile) *docker.Spec { return profile.SectionOf[docker.Spec](p, SectionName) }

// Sections is the docker section, decoded into docker.Spec.
func (Kind) Sections() []profile.Section {
	return []profile.Section{{Name: SectionName, Zero: docker.Spec{}}}
}

var _ profile.Referrer = Kind{}

// References checks those the target expands: docker.env values and
// mount sources. Mount targets are never expanded, so one there is refused.
func (Kind) References(l *profile.Loading) error {
	d := SpecOf(l.Profile())
	for _, k := range slices.Sorted(maps.Keys(d.Env)) {
		if err := l.Reference(d.Env[k]); err != nil {
			return l.Fail("docker.env."+k, err)
		}
	}
	for i, m := range d.Mounts {
		if err := l.Reference(m.Source); err != nil {
			return l.Fail(fmt.Sprintf("docker.mounts[%d].source", i), err)
		}
		if strings.Contains(m.Target, "{{") {
			return l.Fail(fmt.Sprintf("docker.mounts[%d].target", i), fmt.Errorf("%q: references are expanded in mount sources only", m.Target))
		}
	}
	return nil
}
