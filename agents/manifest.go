package agents

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
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

// Open returns the cached install of a's pinned version after checking that
// its manifest names the pinned packages and that the files' sha256 still
// match it. exec: adapters are "installed" where they are.
func (c Cache) Open(a Adapter) (Installed, error) {
	if a.Package == "" {
		return a.execInstalled()
	}
	dir := c.Folder(a)
	b, err := os.ReadFile(filepath.Join(dir, manifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return Installed{}, fmt.Errorf("%w: %s %s (no %s)", ErrNotInstalled, a.Name, a.Version, dir)
	}
	if err != nil {
		return Installed{}, err
	}
	var in Installed
	if err := json.Unmarshal(b, &in); err != nil {
		return Installed{}, fmt.Errorf("%w: %s: %v", ErrNotInstalled, filepath.Join(dir, manifestName), err)
	}
	in.Dir = dir
	if err := in.matches(a); err != nil {
		return Installed{}, fmt.Errorf("%w: %s: %v", ErrNotInstalled, dir, err)
	}
	return in, nil
}

// matches says whether in is a's pinned install, files included.
func (in Installed) matches(a Adapter) error {
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
		for _, x := range p.exec {
			fi, err := os.Stat(filepath.Join(in.Dir, filepath.FromSlash(p.folder()), filepath.FromSlash(x)))
			if err != nil || fi.Mode()&0o111 == 0 {
				return fmt.Errorf("%s/%s is not executable", p.folder(), x)
			}
		}
	}
	files := []File{in.Binary}
	if in.Runtime != nil {
		files = append(files, *in.Runtime)
	}
	for _, f := range files {
		got, err := digest(filepath.Join(in.Dir, filepath.FromSlash(f.Path)))
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

// digest hashes a file (a few hundred MB take well under a second).
func digest(file string) (File, error) {
	f, err := os.Open(file)
	if err != nil {
		return File{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return File{}, err
	}
	return File{Path: file, SHA256: hex.EncodeToString(h.Sum(nil)), Size: n}, nil
}
