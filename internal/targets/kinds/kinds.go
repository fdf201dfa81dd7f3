// Package kinds is the list of profile kinds Gatehouse knows: one per
// target, each defined by its adapter (docs/adding-a-target.md). Load and
// LoadFS read a profile with all of them; a profile whose target names
// none is refused.
package kinds

import (
	"io/fs"

	"github.com/gatehouse-dev/gatehouse/internal/targets/bwrap"
	"github.com/gatehouse-dev/gatehouse/internal/targets/docker/dockerkind"
	"github.com/gatehouse-dev/gatehouse/internal/targets/exec"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/internal/targets/realwrap"
)

// All are the kinds, in the order messages list them.
var All = profile.Kinds{
	bwrap.Kind{},
	dockerkind.New(dockerkind.Docker),
	dockerkind.New(dockerkind.GVisor),
	exec.NewKind(exec.KindExec),
	exec.NewKind(exec.KindFirejail),
	realwrap.NewKind(realwrap.KindSRT),
	realwrap.NewKind(realwrap.KindCodex),
}

// Load reads a profile file of any known kind (profile.Load).
func Load(file string) (*profile.Profile, error) { return profile.Load(file, All) }

// LoadFS reads a profile of any known kind from fsys (profile.LoadFS).
func LoadFS(fsys fs.FS, name string) (*profile.Profile, error) {
	return profile.LoadFS(fsys, name, All)
}
