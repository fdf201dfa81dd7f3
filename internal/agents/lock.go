package agents

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// lock.json pins, in the repository, the sha512 integrity of every tarball
// the installer may unpack: each pinned package and the platform packages
// that carry the native binaries. The registry (npm's, a team's mirror, a
// compromised one) is only asked where a tarball is: a document naming
// another integrity, or a tarball of another digest, is refused. Written
// by `gatehouse agents lock` (lockgen.go), reviewed as a diff.
//
//go:embed lock.json
var lockFile []byte

const lockSchema = "gatehouse.npm-lock/v1"

// ErrUnpinned means the registry offered something lock.json does not pin:
// another integrity, another platform package, a package it does not list.
var ErrUnpinned = errors.New("not what lock.json pins")

// Lock is lock.json: "name@version" of every tarball the installer may
// fetch, with its integrity.
type Lock struct {
	Schema   string            `json:"schema"`
	Packages map[string]Locked `json:"packages"`
}

// Locked is one pinned tarball.
type Locked struct {
	Integrity string `json:"integrity"` // "sha512-<base64>", as npm writes it
	// Optional are the package's optionalDependencies that name the
	// platform packages the lock holds (npm aliases as written:
	// "npm:@openai/codex@0.171.0-linux-x64").
	Optional map[string]string `json:"optionalDependencies,omitempty"`
}

var embedded = sync.OnceValues(func() (Lock, error) { return ParseLock(lockFile) })

// EmbeddedLock is the lock.json built into this binary.
func EmbeddedLock() (Lock, error) { return embedded() }

// ParseLock reads a lock.json and checks its shape.
func ParseLock(b []byte) (Lock, error) {
	var l Lock
	if err := json.Unmarshal(b, &l); err != nil {
		return Lock{}, fmt.Errorf("agents: lock.json: %w", err)
	}
	if l.Schema != lockSchema {
		return Lock{}, fmt.Errorf("agents: lock.json: schema %q, want %q", l.Schema, lockSchema)
	}
	for id, e := range l.Packages {
		if !validName(id) || !strings.HasPrefix(e.Integrity, "sha512-") {
			return Lock{}, fmt.Errorf("agents: lock.json: %q: want name@version and a sha512 integrity", id)
		}
	}
	return l, nil
}

// JSON is the lock as lock.json holds it (keys sorted: a stable diff).
func (l Lock) JSON() []byte {
	b, _ := json.MarshalIndent(l, "", "  ")
	return append(b, '\n')
}

func (l Lock) get(id string) (Locked, error) {
	e, ok := l.Packages[id]
	if !ok {
		return Locked{}, fmt.Errorf("%w: %s is not in lock.json (run `gatehouse agents lock`, see docs/agents.md)", ErrUnpinned, id)
	}
	return e, nil
}

// target is the name and version of the tarball p is unpacked from, as the
// lock says: p itself, or its platform package (through the alias the
// lock records for it, or named by convention as Node's is).
func (l Lock) target(p part) (string, string, error) {
	if p.platform == "" {
		return p.pkg, p.version, nil
	}
	main, err := l.get(p.pin())
	if err != nil {
		return "", "", err
	}
	name, version := p.platform, p.version
	if spec, ok := main.Optional[p.platform]; ok {
		name, version = aliasOf(p.platform, spec)
	}
	_, err = l.get(name + "@" + version)
	return name, version, err
}

// check holds what the registry says about a tarball against the lock.
func (l Lock) check(t Tarball) error {
	e, err := l.get(t.id())
	if err != nil {
		return err
	}
	if t.Integrity != e.Integrity {
		return fmt.Errorf("%w: the registry says %s has integrity %s, lock.json pins %s: refusing it", ErrUnpinned, t.id(), t.Integrity, e.Integrity)
	}
	return nil
}

// Changes compares l with a newer lock: the entries added and removed,
// and an error naming every name@version both hold with another
// integrity (a published npm version never changes: a registry that says
// otherwise is lying, or a mirror serves something else).
func (l Lock) Changes(next Lock) (added, removed []string, err error) {
	var changed []string
	for id, e := range next.Packages {
		old, ok := l.Packages[id]
		switch {
		case !ok:
			added = append(added, id)
		case old.Integrity != e.Integrity:
			changed = append(changed, fmt.Sprintf("%s: %s now %s", id, old.Integrity, e.Integrity))
		}
	}
	for id := range l.Packages {
		if _, ok := next.Packages[id]; !ok {
			removed = append(removed, id)
		}
	}
	sort.Strings(added)
	sort.Strings(removed)
	sort.Strings(changed)
	if len(changed) > 0 {
		err = fmt.Errorf("%w: the registry gives another integrity for a version lock.json pins (remove the entry by hand only if you know why): %s", ErrUnpinned, strings.Join(changed, "; "))
	}
	return added, removed, err
}
