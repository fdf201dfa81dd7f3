package agents

import (
	"context"
	"fmt"
	"strings"
)

// LockPlatforms are the platforms lock.json holds native packages for:
// an install elsewhere is refused as unpinned.
var LockPlatforms = []string{"linux-x64", "linux-arm64"}

// Pinned are every adapter and tool that installs npm packages: what
// lock.json must cover.
func Pinned() []Adapter {
	var out []Adapter
	for _, n := range Names() {
		a, _ := Lookup(n)
		out = append(out, a)
	}
	for _, n := range Tools() {
		a, _ := Tool(n)
		out = append(out, a)
	}
	return out
}

// MakeLock asks the registry for the integrity of every tarball the
// adapters' pins need, on every platform of LockPlatforms: the lock.json
// to review and commit. It trusts the registry it asks, once, as npm does
// when it writes package-lock.json; Lock.Changes against the lock in use
// then refuses any pinned version whose integrity changed.
func (c Cache) MakeLock(ctx context.Context, as []Adapter) (Lock, error) {
	reg, err := newRegistry(c.Registry, c.Client, c.InsecureLoopback)
	if err != nil {
		return Lock{}, err
	}
	l := Lock{Schema: lockSchema, Packages: map[string]Locked{}}
	for _, a := range as {
		for _, p := range a.parts() {
			if err := l.add(ctx, reg, p); err != nil {
				return Lock{}, fmt.Errorf("agents: lock %s: %w", a.Name, err)
			}
		}
	}
	return l, nil
}

func (l Lock) add(ctx context.Context, reg registry, p part) error {
	main, err := reg.meta(ctx, p.pkg, p.version)
	if err != nil {
		return err
	}
	e := Locked{Integrity: main.Integrity}
	if p.platform == "" {
		l.Packages[main.id()] = e
		return nil
	}
	for _, plat := range LockPlatforms {
		platform := strings.TrimSuffix(p.platform, platformSuffix()) + plat
		name, version := platform, p.version
		if spec, ok := main.OptionalDependencies[platform]; ok {
			name, version = aliasOf(platform, spec)
			if e.Optional == nil {
				e.Optional = map[string]string{}
			}
			e.Optional[platform] = spec
		}
		t, err := reg.meta(ctx, name, version)
		if err != nil {
			return err
		}
		l.Packages[t.id()] = Locked{Integrity: t.Integrity}
	}
	l.Packages[main.id()] = e
	return nil
}
