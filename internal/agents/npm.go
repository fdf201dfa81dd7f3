package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// DefaultRegistry is the only place agents are fetched from.
const DefaultRegistry = "https://registry.npmjs.org"

// Why an HTTP GET of the tarball and not `npm install`/`npm pack`: npm would
// run the packages' lifecycle scripts (Claude Code's postinstall, the node
// package's preinstall that calls npm again), keep a second copy in ~/.npm,
// and need npm and Node on the host. Here nothing the package ships runs at
// install time, every tarball must have the sha512 pinned in lock.json (the
// registry's metadata is only asked where to download it), and tests can
// point the client at a fake registry.

// ErrRegistry wraps every failure to reach or read the registry, so the CLI
// can tell "offline and nothing cached" (exit 2) from a broken cache.
var ErrRegistry = errors.New("npm registry")

// Tarball is one package version as the registry describes it.
type Tarball struct {
	Pin       string `json:"pin"` // the pinned package this was fetched for: "@openai/codex@0.171.0"
	Package   string `json:"package"`
	Version   string `json:"version"`
	URL       string `json:"url"`
	Integrity string `json:"integrity"` // "sha512-<base64>", as pinned in lock.json
	// OptionalDependencies point at the platform packages that carry the
	// native binaries ("npm:@openai/codex@0.171.0-linux-x64" for an alias).
	OptionalDependencies map[string]string `json:"-"`
}

func (t Tarball) id() string { return t.Package + "@" + t.Version }

// registry is a minimal npm registry client: version metadata and tarballs.
type registry struct {
	base   *url.URL
	client *http.Client
}

// newRegistry checks the registry's address: https, or plain http only on
// a loopback address and only when insecureLoopback says so (a test's
// fake registry, a mirror tunnelled to localhost). The client it gets
// follows no redirect to anything the same rule would refuse (a redirect
// to http://169.254.169.254/ is refused, not followed).
func newRegistry(base string, client *http.Client, insecureLoopback bool) (registry, error) {
	if base == "" {
		base = DefaultRegistry
	}
	u, err := url.Parse(base)
	if err != nil {
		return registry{}, fmt.Errorf("agents: registry %q: %w", base, err)
	}
	if err := allowedURL(u, insecureLoopback); err != nil {
		return registry{}, fmt.Errorf("agents: registry %s: %w", u.Redacted(), err)
	}
	cl := http.Client{}
	if client != nil {
		cl = *client
	}
	cl.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("more than 5 redirects")
		}
		if err := allowedURL(req.URL, insecureLoopback); err != nil {
			return fmt.Errorf("redirect to %s: %w", req.URL.Redacted(), err)
		}
		return nil
	}
	return registry{base: u, client: &cl}, nil
}

// allowedURL is the https rule for the registry and everything it sends
// the client to.
func allowedURL(u *url.URL, insecureLoopback bool) error {
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("scheme %q: only https is allowed", u.Scheme)
	case u.Host == "" || u.Opaque != "":
		return errors.New("not an absolute URL")
	case u.Scheme == "https":
		return nil
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil || !ip.IsLoopback() {
		return errors.New("plain http: only https is allowed (http only for a loopback address with GATEHOUSE_NPM_REGISTRY_INSECURE_LOOPBACK=1)")
	}
	if !insecureLoopback {
		return errors.New("plain http on loopback needs GATEHOUSE_NPM_REGISTRY_INSECURE_LOOPBACK=1")
	}
	return nil
}

// meta reads GET {base}/{package}/{version}: the document npm itself reads.
// Its integrity is returned as the registry says it; the caller holds it
// against the lock.
func (r registry) meta(ctx context.Context, pkg, version string) (Tarball, error) {
	if !validName(pkg) || !validName(version) {
		return Tarball{}, fmt.Errorf("agents: bad package or version %q@%q", pkg, version)
	}
	u := strings.TrimRight(r.base.String(), "/") + "/" + pkg + "/" + version
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Tarball{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return Tarball{}, fmt.Errorf("%w: %s@%s: %w", ErrRegistry, pkg, version, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Tarball{}, fmt.Errorf("%w: %s@%s: %s", ErrRegistry, pkg, version, resp.Status)
	}
	var doc struct {
		Name     string            `json:"name"`
		Version  string            `json:"version"`
		Optional map[string]string `json:"optionalDependencies"`
		Dist     struct {
			Tarball   string `json:"tarball"`
			Integrity string `json:"integrity"`
		} `json:"dist"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&doc); err != nil {
		return Tarball{}, fmt.Errorf("%w: %s@%s: metadata: %w", ErrRegistry, pkg, version, err)
	}
	if doc.Version != version || !strings.HasPrefix(doc.Dist.Integrity, "sha512-") {
		return Tarball{}, fmt.Errorf("%w: %s@%s: metadata names version %q, integrity %q (want the pinned version and a sha512)", ErrRegistry, pkg, version, doc.Version, doc.Dist.Integrity)
	}
	// The tarball must come from the registry we asked, never a host its
	// metadata names, and never over plain http from an https registry.
	tu, err := url.Parse(doc.Dist.Tarball)
	if err != nil || tu.Host != r.base.Host || (tu.Scheme != r.base.Scheme && tu.Scheme != "https") {
		return Tarball{}, fmt.Errorf("%w: %s@%s: tarball %q is not on %s", ErrRegistry, pkg, version, doc.Dist.Tarball, r.base.Redacted())
	}
	return Tarball{Package: pkg, Version: version, URL: doc.Dist.Tarball, Integrity: doc.Dist.Integrity, OptionalDependencies: doc.Optional}, nil
}

// validName accepts npm package names (scoped or not) and versions, and
// nothing that could change the shape of the URL they are put in.
func validName(s string) bool {
	if s == "" || strings.Contains(s, "..") {
		return false
	}
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("@/._-+", c)
		if !ok {
			return false
		}
	}
	return true
}
