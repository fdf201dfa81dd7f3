package agents

import (
	"bytes"
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

	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
	"golang.org/x/sys/unix"
)

// ErrNotInstalled means the cache has no usable install of the adapter's
// pinned version: run `gatehouse agents install NAME`.
var ErrNotInstalled = errors.New("agent not installed")

// Cache is the folder agents are installed into, one sub-folder per
// adapter and version: <Dir>/<name>-<version>/, like runsc and cosign.
type Cache struct {
	Dir      string       // e.g. /var/cache/gatehouse/agents
	Registry string       // "" means DefaultRegistry; https only (see InsecureLoopback)
	Client   *http.Client // nil means a client with generous timeouts
	Log      io.Writer    // progress lines; nil means none
	// InsecureLoopback lets Registry be plain http when its host is a
	// loopback address (a test's fake registry); never anything else.
	InsecureLoopback bool
	// Limits bound each tarball's extraction; zero fields take defaults.
	Limits Limits

	lock *Lock // nil means the embedded lock.json (tests pin their fakes)
}

// DefaultCache is $GATEHOUSE_CACHE/agents (default /var/cache/gatehouse),
// fetching from $GATEHOUSE_NPM_REGISTRY when set (a team's mirror of the
// npm registry, https; plain http only on loopback with
// GATEHOUSE_NPM_REGISTRY_INSECURE_LOOPBACK=1), else the npm registry.
func DefaultCache(getenv func(string) string) Cache {
	root := getenv("GATEHOUSE_CACHE")
	if root == "" {
		root = "/var/cache/gatehouse"
	}
	return Cache{Dir: filepath.Join(root, "agents"), Registry: getenv("GATEHOUSE_NPM_REGISTRY"),
		InsecureLoopback: getenv("GATEHOUSE_NPM_REGISTRY_INSECURE_LOOPBACK") == "1"}
}

// Folder is where a's pinned version is (or would be) installed.
func (c Cache) Folder(a Adapter) string { return filepath.Join(c.Dir, a.Name+"-"+a.Version) }

func (c Cache) theLock() (Lock, error) {
	if c.lock != nil {
		return *c.lock, nil
	}
	return EmbeddedLock()
}

// Install fetches a's pinned packages from the registry unless the cache
// already holds them (then it only checks them: fetched is false). Every
// tarball must have the integrity lock.json pins. The new folder is
// staged next to its final place and renamed into it, so a folder under
// its final name is always whole; on any error the staging folder is
// removed whole.
func (c Cache) Install(ctx context.Context, a Adapter) (in Installed, fetched bool, err error) {
	if in, err := c.Open(a); err == nil {
		return in, false, nil
	} else if !errors.Is(err, ErrNotInstalled) || a.Package == "" {
		return Installed{}, false, err
	}
	lock, err := c.theLock()
	if err != nil {
		return Installed{}, false, err
	}
	client := c.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Minute}
	}
	reg, err := newRegistry(c.Registry, client, c.InsecureLoopback)
	if err != nil {
		return Installed{}, false, err
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return Installed{}, false, err
	}
	// The cache's own path is configuration (it may hold a link the admin
	// made); below it, nothing is followed.
	cacheDir, err := c.realDir()
	if err != nil {
		return Installed{}, false, err
	}
	stagePath, err := os.MkdirTemp(cacheDir, "."+a.Name+"-*")
	if err != nil {
		return Installed{}, false, err
	}
	defer os.RemoveAll(stagePath) // never follows a link the tarballs made
	stage, err := untrusted.OpenDir(stagePath)
	if err != nil {
		return Installed{}, false, err
	}
	defer stage.Close()
	if err := unix.Fchmod(stage.Fd(), 0o755); err != nil {
		return Installed{}, false, err
	}
	in = Installed{Schema: manifestSchema, Agent: a.Name, Version: a.Version, API: a.API}
	parts := a.parts()
	for i, p := range parts {
		t, err := c.fetch(ctx, reg, lock, p, stage)
		if err != nil {
			return Installed{}, false, fmt.Errorf("agents: install %s: %w", a.Name, err)
		}
		in.Tarballs = append(in.Tarballs, t)
		rel := path.Join(p.folder(), p.file)
		f, err := digest(ctx, stage, rel)
		if err != nil {
			return Installed{}, false, fmt.Errorf("agents: install %s: %s has no %s: %w", a.Name, t.Package, p.file, err)
		}
		switch {
		case i == 0:
			in.Binary = f
		case a.runtime != nil && i == len(parts)-1:
			in.Runtime = &f
		} // a module's file only proves it unpacked
	}
	b, _ := json.MarshalIndent(in, "", "  ")
	if err := stage.WriteFile(manifestName, bytes.NewReader(append(b, '\n')), 0o644); err != nil {
		return Installed{}, false, err
	}
	dir := c.Folder(a)
	_ = os.RemoveAll(dir) // a stale or broken install of this version
	if err := os.Rename(stagePath, dir); err != nil {
		if in, oerr := c.Open(a); oerr == nil { // another installer won the race
			return in, false, nil
		}
		return Installed{}, false, err
	}
	in.Dir = dir
	return in, true, nil
}

// fetch resolves p to the tarball lock.json pins for it (its platform
// package when it has one), holds the registry's documents against the
// lock, and unpacks the tarball under stage/<package folder>/.
func (c Cache) fetch(ctx context.Context, reg registry, lock Lock, p part, stage *untrusted.Dir) (Tarball, error) {
	main, err := reg.meta(ctx, p.pkg, p.version)
	if err != nil {
		return Tarball{}, err
	}
	if err := lock.check(main); err != nil {
		return Tarball{}, err
	}
	t := main
	if p.platform != "" {
		locked, err := lock.get(p.pin())
		if err != nil {
			return Tarball{}, err
		}
		if got, want := main.OptionalDependencies[p.platform], locked.Optional[p.platform]; got != want {
			return Tarball{}, fmt.Errorf("%w: the registry says %s's %s is %q, lock.json pins %q", ErrUnpinned, p.pin(), p.platform, got, want)
		}
		name, version, err := lock.target(p)
		if err != nil {
			return Tarball{}, err
		}
		if t, err = reg.meta(ctx, name, version); err != nil {
			return Tarball{}, err
		}
		if err := lock.check(t); err != nil {
			return Tarball{}, err
		}
	}
	t.Pin = p.pin()
	c.logf("agents: fetching %s (%s)", t.id(), t.URL)
	folder := p.folder()
	if err := stage.MkdirAll(folder, 0o755); err != nil {
		return Tarball{}, err
	}
	dst, err := stage.Sub(folder)
	if err != nil {
		return Tarball{}, err
	}
	defer dst.Close()
	if err := reg.unpack(ctx, t, stage, dst, c.Limits); err != nil {
		return Tarball{}, err
	}
	for _, x := range p.exec {
		if err := chmodExec(dst, x); err != nil {
			return Tarball{}, err
		}
	}
	return t, nil
}

// chmodExec sets 0755 on the regular file name through its descriptor: a
// link the tarball put there is refused, never followed.
func chmodExec(d *untrusted.Dir, name string) error {
	f, err := d.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Chmod(0o755)
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
