package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// ErrNotInstalled means the cache has no usable install of the adapter's
// pinned version: run `gatehouse agents install NAME`.
var ErrNotInstalled = errors.New("agent not installed")

// Cache is the folder agents are installed into, one sub-folder per
// adapter and version: <Dir>/<name>-<version>/, like runsc and cosign.
type Cache struct {
	Dir      string       // e.g. /var/cache/gatehouse/agents
	Registry string       // "" means DefaultRegistry
	Client   *http.Client // nil means a client with generous timeouts
	Log      io.Writer    // progress lines; nil means none
}

// DefaultCache is $GATEHOUSE_CACHE/agents (default /var/cache/gatehouse),
// fetching from $GATEHOUSE_NPM_REGISTRY when set (a team's mirror of the
// npm registry), else the npm registry.
func DefaultCache(getenv func(string) string) Cache {
	root := getenv("GATEHOUSE_CACHE")
	if root == "" {
		root = "/var/cache/gatehouse"
	}
	return Cache{Dir: filepath.Join(root, "agents"), Registry: getenv("GATEHOUSE_NPM_REGISTRY")}
}

// Folder is where a's pinned version is (or would be) installed.
func (c Cache) Folder(a Adapter) string { return filepath.Join(c.Dir, a.Name+"-"+a.Version) }

// Install fetches a's pinned packages from the registry unless the cache
// already holds them (then it only checks them: fetched is false). The new
// folder is staged next to its final place and renamed into it, so a
// folder under its final name is always whole.
func (c Cache) Install(ctx context.Context, a Adapter) (in Installed, fetched bool, err error) {
	if in, err := c.Open(a); err == nil {
		return in, false, nil
	} else if !errors.Is(err, ErrNotInstalled) || a.Package == "" {
		return Installed{}, false, err
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return Installed{}, false, err
	}
	stage, err := os.MkdirTemp(c.Dir, "."+a.Name+"-*")
	if err != nil {
		return Installed{}, false, err
	}
	defer os.RemoveAll(stage)
	if err := os.Chmod(stage, 0o755); err != nil {
		return Installed{}, false, err
	}
	reg := registry{base: c.Registry, client: c.Client}
	if reg.base == "" {
		reg.base = DefaultRegistry
	}
	if reg.client == nil {
		reg.client = &http.Client{Timeout: 30 * time.Minute}
	}
	in = Installed{Schema: manifestSchema, Agent: a.Name, Version: a.Version, API: a.API}
	parts := a.parts()
	for i, p := range parts {
		t, rel, err := c.fetch(ctx, reg, p, stage)
		if err != nil {
			return Installed{}, false, fmt.Errorf("agents: install %s: %w", a.Name, err)
		}
		in.Tarballs = append(in.Tarballs, t)
		f, err := digest(filepath.Join(stage, filepath.FromSlash(rel)))
		if err != nil {
			return Installed{}, false, fmt.Errorf("agents: install %s: %s has no %s: %w", a.Name, t.Package, p.file, err)
		}
		f.Path = rel
		switch {
		case i == 0:
			in.Binary = f
		case a.runtime != nil && i == len(parts)-1:
			in.Runtime = &f
		} // a module's file only proves it unpacked
	}
	b, _ := json.MarshalIndent(in, "", "  ")
	if err := os.WriteFile(filepath.Join(stage, manifestName), append(b, '\n'), 0o644); err != nil {
		return Installed{}, false, err
	}
	dir := c.Folder(a)
	_ = os.RemoveAll(dir) // a stale or broken install of this version
	if err := os.Rename(stage, dir); err != nil {
		if in, oerr := c.Open(a); oerr == nil { // another installer won the race
			return in, false, nil
		}
		return Installed{}, false, err
	}
	in.Dir = dir
	return in, true, nil
}

// fetch resolves p (through its platform package when it has one), unpacks
// it under stage/<package name>/ and returns the identifying file's path
// relative to stage.
func (c Cache) fetch(ctx context.Context, reg registry, p part, stage string) (Tarball, string, error) {
	main, err := reg.meta(ctx, p.pkg, p.version)
	if err != nil {
		return Tarball{}, "", err
	}
	t := main
	if p.platform != "" {
		name, version := p.platform, p.version
		if spec, ok := main.OptionalDependencies[p.platform]; ok {
			name, version = aliasOf(p.platform, spec)
		}
		if t, err = reg.meta(ctx, name, version); err != nil {
			return Tarball{}, "", err
		}
	}
	folder := p.folder()
	t.Pin = p.pin()
	c.logf("agents: fetching %s@%s (%s)", t.Package, t.Version, t.URL)
	if err := reg.unpack(ctx, t, filepath.Join(stage, filepath.FromSlash(folder))); err != nil {
		return Tarball{}, "", err
	}
	for _, x := range p.exec {
		if err := os.Chmod(filepath.Join(stage, filepath.FromSlash(folder), filepath.FromSlash(x)), 0o755); err != nil {
			return Tarball{}, "", err
		}
	}
	return t, path.Join(folder, p.file), nil
}

// aliasOf reads an optionalDependencies spec: "2.1.3" or an npm alias
// "npm:@openai/codex@0.171.0-linux-x64".
func aliasOf(name, spec string) (string, string) {
	if rest, ok := strings.CutPrefix(spec, "npm:"); ok {
		if i := strings.LastIndex(rest, "@"); i > 0 {
			return rest[:i], rest[i+1:]
		}
	}
	return name, spec
}

func (c Cache) logf(format string, a ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", a...)
	}
}

// platformSuffix is npm's name for this machine in platform packages.
func platformSuffix() string {
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	if arch == "" {
		arch = runtime.GOARCH
	}
	return runtime.GOOS + "-" + arch
}
