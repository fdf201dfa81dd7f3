package agents

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// DefaultRegistry is the only place agents are fetched from.
const DefaultRegistry = "https://registry.npmjs.org"

// Why an HTTP GET of the tarball and not `npm install`/`npm pack`: npm would
// run the packages' lifecycle scripts (Claude Code's postinstall, the node
// package's preinstall that calls npm again), keep a second copy in ~/.npm,
// and need npm and Node on the host. Here nothing the package ships runs at
// install time, the registry's own dist.integrity (sha512) is checked by our
// code and written into the manifest, and tests can point the client at a
// fake registry.

// ErrRegistry wraps every failure to reach or read the registry, so the CLI
// can tell "offline and nothing cached" (exit 2) from a broken cache.
var ErrRegistry = errors.New("npm registry")

// Tarball is one package version as the registry describes it.
type Tarball struct {
	Pin       string `json:"pin"` // the pinned package this was fetched for: "@openai/codex@0.171.0"
	Package   string `json:"package"`
	Version   string `json:"version"`
	URL       string `json:"url"`
	Integrity string `json:"integrity"` // "sha512-<base64>" from dist.integrity
	// OptionalDependencies point at the platform packages that carry the
	// native binaries ("npm:@openai/codex@0.171.0-linux-x64" for an alias).
	OptionalDependencies map[string]string `json:"-"`
}

// registry is a minimal npm registry client: version metadata and tarballs.
type registry struct {
	base   string
	client *http.Client
}

// meta reads GET {base}/{package}/{version}: the document npm itself reads.
func (r registry) meta(ctx context.Context, pkg, version string) (Tarball, error) {
	if !validName(pkg) || !validName(version) {
		return Tarball{}, fmt.Errorf("agents: bad package or version %q@%q", pkg, version)
	}
	u := strings.TrimRight(r.base, "/") + "/" + pkg + "/" + version
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
	// metadata names.
	tu, err := url.Parse(doc.Dist.Tarball)
	bu, _ := url.Parse(r.base)
	if err != nil || bu == nil || tu.Host != bu.Host || (tu.Scheme != bu.Scheme && tu.Scheme != "https") {
		return Tarball{}, fmt.Errorf("%w: %s@%s: tarball %q is not on %s", ErrRegistry, pkg, version, doc.Dist.Tarball, r.base)
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

// unpack downloads t, checks its sha512 against t.Integrity while reading,
// and extracts its "package/" folder into dir. dir is a staging folder:
// on a digest mismatch the caller throws it away whole.
func (r registry) unpack(ctx context.Context, t Tarball, dir string) error {
	want, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(t.Integrity, "sha512-"))
	if err != nil {
		return fmt.Errorf("%s@%s: integrity %q: %w", t.Package, t.Version, t.Integrity, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.URL, nil)
	if err != nil {
		return err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrRegistry, t.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: %s: %s", ErrRegistry, t.URL, resp.Status)
	}
	// Spool to disk first: nothing is extracted before the digest matches.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	spool, err := os.CreateTemp(filepath.Dir(dir), ".tgz-*")
	if err != nil {
		return err
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	h := sha512.New()
	if _, err := io.Copy(io.MultiWriter(spool, h), resp.Body); err != nil {
		return fmt.Errorf("%w: %s: download: %w", ErrRegistry, t.URL, err)
	}
	if got := h.Sum(nil); string(got) != string(want) {
		return fmt.Errorf("%s@%s: sha512 of the tarball is %s, the registry says %s: refusing it",
			t.Package, t.Version, base64.StdEncoding.EncodeToString(got), t.Integrity)
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return extract(spool, dir)
}

// extract writes a gzipped npm tarball's entries under dir, dropping the
// first path element ("package/" by convention). Only regular files,
// folders and relative symlinks that stay inside dir are written.
func extract(r io.Reader, dir string) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("tarball: %w", err)
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("tarball: %w", err)
		}
		name := path.Clean(strings.TrimPrefix(hdr.Name, "/"))
		if _, rest, ok := strings.Cut(name, "/"); ok {
			name = rest
		} else if hdr.Typeflag != tar.TypeDir {
			name = path.Base(name)
		} else {
			continue
		}
		if name == "." || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("tarball: entry %q leaves the package", hdr.Name)
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := writeFile(dst, tr, hdr.FileInfo().Mode()); err != nil {
				return err
			}
		case tar.TypeSymlink:
			target := path.Join(path.Dir(name), hdr.Linkname)
			if path.IsAbs(hdr.Linkname) || target == ".." || strings.HasPrefix(target, "../") {
				return fmt.Errorf("tarball: symlink %q -> %q leaves the package", hdr.Name, hdr.Linkname)
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(hdr.Linkname, dst); err != nil {
				return err
			}
		default: // hard links, devices, fifos: npm packages have no use for them
		}
	}
}

// writeFile makes files readable by everyone (the agent runs as an
// unprivileged user and reads them through a read-only bind) and keeps the
// executable bit where the package set it.
func writeFile(dst string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	perm := os.FileMode(0o644)
	if mode&0o111 != 0 {
		perm = 0o755
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, perm) // the umask must not take the bits away
}
