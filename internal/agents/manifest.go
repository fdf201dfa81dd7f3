package agents

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"

	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
)

// The manifest sits next to the files it describes, in the install folder.
const (
	manifestName   = "manifest.json"
	manifestSchema = "gatehouse.agent-install/v1"
)

// Installed is an adapter's install: the manifest written next to it.
type Installed struct {
	Schema  string `json:"schema"`
	Agent   string `json:"agent"`
	Version string `json:"version"`
	API     API    `json:"api,omitempty"`
	Dir     string `json:"-"` // host folder of the install
	// Tarballs are what was fetched, with the registry's integrity.
	Tarballs []Tarball `json:"tarballs,omitempty"`
	// Binary identifies the agent: its native binary, or its entry script.
	Binary File `json:"binary"`
	// Runtime is the interpreter that runs Binary, when it needs one.
	Runtime *File `json:"runtime,omitempty"`
}

// File is one file of an install, relative to Installed.Dir.
type File struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Open returns the cached install of a's pinned version after checking
// that its manifest names the pinned packages with the integrity lock.json
// pins, and that the files' sha256 still match it. Nothing in the folder
// is followed through a link. exec: adapters are "installed" where they
// are.
func (c Cache) Open(a Adapter) (Installed, error) {
	if a.Package == "" {
		return a.execInstalled()
	}
	lock, err := c.theLock()
	if err != nil {
		return Installed{}, err
	}
	dir := c.Folder(a)
	d, err := c.openFolder(filepath.Base(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return Installed{}, fmt.Errorf("%w: %s %s (no %s)", ErrNotInstalled, a.Name, a.Version, dir)
	}
	if err != nil {
		return Installed{}, fmt.Errorf("%w: %s: %v", ErrNotInstalled, dir, err)
	}
	defer d.Close()
	b, err := d.ReadFile(manifestName, 1<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return Installed{}, fmt.Errorf("%w: %s %s (no %s)", ErrNotInstalled, a.Name, a.Version, filepath.Join(dir, manifestName))
	}
	if err != nil {
		return Installed{}, fmt.Errorf("%w: %s: %v", ErrNotInstalled, filepath.Join(dir, manifestName), err)
	}
	var in Installed
	if err := json.Unmarshal(b, &in); err != nil {
		return Installed{}, fmt.Errorf("%w: %s: %v", ErrNotInstalled, filepath.Join(dir, manifestName), err)
	}
	in.Dir = dir
	if err := in.matches(a, lock, d); err != nil {
		return Installed{}, fmt.Errorf("%w: %s: %v", ErrNotInstalled, dir, err)
	}
	return in, nil
}

// openFolder opens the install folder name of the cache: the cache's own
// path is configuration and may hold a link; the folder and everything
// below it are opened with no link followed.
func (c Cache) openFolder(name string) (*untrusted.Dir, error) {
	root, err := c.realDir()
	if err != nil {
		return nil, err
	}
	cache, err := untrusted.OpenDir(root)
	if err != nil {
		return nil, err
	}
	defer cache.Close()
	return cache.Sub(name)
}

// realDir is the cache folder's absolute path with the links in it (the
// admin's) resolved.
func (c Cache) realDir() (string, error) {
	abs, err := filepath.Abs(c.Dir)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// matches says whether in (the install in d) is a's pinned install, files
// included.
func (in Installed) matches(a Adapter, lock Lock, d *untrusted.Dir) error {
	if in.Schema != manifestSchema || in.Agent != a.Name || in.Version != a.Version {
		return fmt.Errorf("manifest is for %s %s (%s), want %s %s", in.Agent, in.Version, in.Schema, a.Name, a.Version)
	}
	if (a.runtime == nil) != (in.Runtime == nil) || len(in.Tarballs) != len(a.parts()) {
		return errors.New("manifest lists other packages than the adapter pins")
	}
	for i, p := range a.parts() {
		t := in.Tarballs[i]
		if t.Pin != p.pin() {
			return fmt.Errorf("manifest has %s, want %s", t.Pin, p.pin())
		}
		name, version, err := lock.target(p)
		if err != nil {
			return err
		}
		if t.Package != name || t.Version != version {
			return fmt.Errorf("manifest has %s for %s, lock.json pins %s@%s", t.id(), t.Pin, name, version)
		}
		if err := lock.check(t); err != nil {
			return err
		}
		for _, x := range p.exec {
			fi, err := d.Lstat(path.Join(p.folder(), x))
			if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
				return fmt.Errorf("%s/%s is not an executable file", p.folder(), x)
			}
		}
	}
	files := []File{in.Binary}
	if in.Runtime != nil {
		files = append(files, *in.Runtime)
	}
	for _, f := range files {
		got, err := digest(context.Background(), d, f.Path)
		if err != nil {
			return err
		}
		if got.SHA256 != f.SHA256 {
			return fmt.Errorf("%s: sha256 %s, manifest says %s (changed since install)", f.Path, got.SHA256, f.SHA256)
		}
	}
	return nil
}

// parts are every package of an install in a fixed order: the agent, its
// modules, then the runtime (last, when there is one).
func (a Adapter) parts() []part {
	ps := append([]part{a.agent}, a.modules...)
	if a.runtime != nil {
		ps = append(ps, *a.runtime)
	}
	return ps
}

// folder is where p is unpacked, relative to the install folder.
func (p part) folder() string {
	f := p.pkg
	if p.platform != "" {
		f = p.platform
	}
	if p.under != "" {
		f = path.Join(p.under, f)
	}
	return f
}

func (p part) pin() string { return p.pkg + "@" + p.version }

// digest hashes the regular file rel of d (a few hundred MB take well
// under a second), bounded, through no link.
func digest(ctx context.Context, d *untrusted.Dir, rel string) (File, error) {
	f, err := d.Open(rel)
	if err != nil {
		return File{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, maxInstalledFile+1))
	if err != nil {
		return File{}, err
	}
	if n > maxInstalledFile {
		return File{}, fmt.Errorf("%s: %w: more than %d bytes", rel, untrusted.ErrTooLarge, maxInstalledFile)
	}
	if err := ctx.Err(); err != nil {
		return File{}, err
	}
	return File{Path: rel, SHA256: hex.EncodeToString(h.Sum(nil)), Size: n}, nil
}

// maxInstalledFile bounds a hashed file as extraction bounds one file.
const maxInstalledFile = 1 << 30
