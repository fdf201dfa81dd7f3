package bwrap

import (
	"fmt"

	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// Section is the profile's bwrap section: exactly the arguments the team
// gives bubblewrap.
type Section struct {
	Args []string `yaml:"args"`
}

// Empty: an empty list (`args: []`) says nothing either.
func (s Section) Empty() bool { return len(s.Args) == 0 }

// SectionOf is p's bwrap section.
func SectionOf(p *profile.Profile) *Section { return profile.SectionOf[Section](p, KindName) }

// section is how the bwrap kind declares its section.
var section = profile.Section{
	Name: KindName,
	Zero: Section{},
	Elsewhere: func(_ []string, target string) error {
		return fmt.Errorf("not for target %s", target)
	},
}
