package exec

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/ledger"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// Where the session's staging folder appears: bound at /gatehouse in the
// private mount namespace the wrapper starts in, so whatever the wrapper
// shows of the host's file system, /gatehouse is the session's own.
const (
	Inside     = "/gatehouse"
	InsideWork = "/gatehouse/work" // writable, shared by every Exec of a session
	// InitPath is where the init binary is bound; the wrapper's command.
	InitPath = "/gatehouse/.init"
)

// stage is a session's folder on the host:
//
//	fs/      bound read-only at /gatehouse (fs/work read-write at /gatehouse/work)
//	policy/  the wrapper's policy files and the generated resolv.conf
//	files/   spec files destined elsewhere, each bound read-only over its path
type stage struct {
	id, root, fs, policy, files string
	release                     func()
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// stageName names a session's staging folder after its network namespace
// when it has one (the lab's name is in it, so concurrent runs on one
// machine can tell their folders apart), else after the session.
func stageName(spec targets.Spec) string {
	if spec.Network.NetnsName != "" {
		return spec.Network.NetnsName
	}
	return spec.Name
}

func newStage(parent, name string) (*stage, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	id := hex.EncodeToString(b)
	root, err := os.MkdirTemp(parent, "gatehouse-exec-"+unsafeName.ReplaceAllString(name, "_")+"-"+id+"-")
	if err != nil {
		return nil, fmt.Errorf("stage: %w", err)
	}
	s := &stage{id: id, root: root, fs: filepath.Join(root, "fs"), policy: filepath.Join(root, "policy"), files: filepath.Join(root, "files")}
	s.release, _ = ledger.Record(ledger.Entry{Kind: ledger.Path, What: root})
	for _, d := range []string{s.fs, filepath.Join(s.fs, "work"), s.policy, s.files} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return s, fmt.Errorf("stage: %w", err)
		}
	}
	// The mount point of the init binary: /gatehouse is read-only inside.
	if err := os.WriteFile(filepath.Join(s.fs, ".init"), nil, 0o755); err != nil {
		return s, fmt.Errorf("stage: %w", err)
	}
	return s, nil
}

// bind is one read-only bind the target adds: host path -> inside path.
type bind struct {
	host, inside string
	rw           bool
	// open, for a harness place, opens host instead of a path lookup
	// (targets.OpenPlace): no link, and the very folder the harness made.
	open func() (*os.File, error)
}

// placeAll writes the spec's files; those outside /gatehouse become binds
// over paths that exist on the host (a mount needs its mount point, and the
// harness does not create files in the host's own folders).
func (s *stage) placeAll(files map[string]targets.File) ([]bind, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var binds []bind
	for i, inside := range names {
		f := files[inside]
		if !path.IsAbs(inside) || path.Clean(inside) != inside {
			return nil, fmt.Errorf("stage: %q is not a clean absolute path", inside)
		}
		rel, under := underInside(inside)
		if f.Bind && f.HostPath != "" && !under {
			if err := mountPoint(inside, f.HostPath); err != nil {
				return nil, err
			}
			binds = append(binds, bind{host: f.HostPath, inside: inside})
			continue
		}
		data := f.Data
		if f.HostPath != "" {
			var err error
			if data, err = readPath(f.HostPath, under && f.Bind, s, rel); err != nil {
				return nil, fmt.Errorf("stage %s: %w", inside, err)
			}
			if data == nil && f.Bind {
				continue // a folder bound under /gatehouse: copied as is
			}
		}
		mode := f.Mode.Perm()
		if mode == 0 {
			mode = 0o644
		}
		if under {
			if err := s.write(rel, bytes.NewReader(data), mode); err != nil {
				return nil, err
			}
			continue
		}
		if err := mountPoint(inside, ""); err != nil {
			return nil, err
		}
		host := filepath.Join(s.files, fmt.Sprintf("%03d-%s", i, path.Base(inside)))
		if err := os.WriteFile(host, data, mode); err != nil {
			return nil, fmt.Errorf("stage %s: %w", inside, err)
		}
		if err := os.Chmod(host, mode); err != nil {
			return nil, fmt.Errorf("stage %s: %w", inside, err)
		}
		binds = append(binds, bind{host: host, inside: inside})
	}
	return binds, nil
}

// readPath reads a spec file; a folder to bind under /gatehouse is copied
// into the stage (nil data).
func readPath(host string, folderOK bool, s *stage, rel string) ([]byte, error) {
	st, err := os.Stat(host)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return os.ReadFile(host)
	}
	if !folderOK {
		return nil, fmt.Errorf("%s is a folder", host)
	}
	return nil, os.CopyFS(filepath.Join(s.fs, filepath.FromSlash(rel)), os.DirFS(host))
}

// mountPoint checks that inside exists on the host, as a file (or a folder
// when the source is one).
func mountPoint(inside, source string) error {
	st, err := os.Stat(inside)
	if err != nil {
		return fmt.Errorf("stage %s: the wrapper sees the host's file system, and %s does not exist there to be bound over: %w", inside, inside, targets.ErrUnsupported)
	}
	wantDir := false
	if source != "" {
		if sst, err := os.Stat(source); err == nil {
			wantDir = sst.IsDir()
		}
	}
	if st.IsDir() != wantDir {
		return fmt.Errorf("stage %s: the host's %s is not of the same kind as the file to bind: %w", inside, inside, targets.ErrUnsupported)
	}
	return nil
}

// underInside maps an in-sandbox path under /gatehouse to a relative path.
func underInside(p string) (string, bool) {
	if !path.IsAbs(p) {
		return "", false
	}
	c := path.Clean(p)
	rel, ok := strings.CutPrefix(c, Inside+"/")
	return rel, ok && rel != ""
}

// write puts a file under fs/, which the sandbox can write (fs/work):
// every name is resolved with no link followed, and the file is written
// to a fresh name renamed over rel, so that a link or a FIFO the sandbox
// planted at rel (or on the way to it) neither redirects a root-owned
// write elsewhere on the host nor blocks it.
func (s *stage) write(rel string, r io.Reader, mode fs.FileMode) error {
	d, err := untrusted.OpenDir(s.fs)
	if err != nil {
		return fmt.Errorf("stage: %w", err)
	}
	defer d.Close()
	if dir := path.Dir(rel); dir != "." {
		if err := d.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("stage %s: %w", rel, err)
		}
	}
	if err := d.WriteFile(rel, r, mode.Perm()); err != nil {
		return fmt.Errorf("stage %s: %w", rel, err)
	}
	return nil
}

// policyFile writes a profile file (or a generated one) under policy/.
func (s *stage) policyFile(name string, data []byte) (string, error) {
	host := filepath.Join(s.policy, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
		return "", fmt.Errorf("stage: %w", err)
	}
	if err := os.WriteFile(host, data, 0o644); err != nil {
		return "", fmt.Errorf("stage: %w", err)
	}
	return host, nil
}

// own gives the session's user the work folder.
func (s *stage) own(uid, gid int) error {
	return os.Chown(filepath.Join(s.fs, "work"), uid, gid)
}

func (s *stage) remove() error {
	if s == nil {
		return nil
	}
	if err := os.RemoveAll(s.root); err != nil {
		return fmt.Errorf("stage: remove: %w", err)
	}
	if s.release != nil {
		s.release()
		s.release = nil
	}
	return nil
}

// workFiles copies the wrapper's files it wants under the work folder
// (Codex's CODEX_HOME/config.toml), owned by the session's user with their
// folders: the wrapper writes next to them.
func (s *stage) workFiles(p *profile.Profile, w profile.Wrapper, uid, gid int) error {
	rels := make([]string, 0, len(w.WorkFiles))
	for rel := range w.WorkFiles {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	for _, rel := range rels {
		data, _ := p.File(w.Files[w.WorkFiles[rel]])
		full := path.Join("work", rel)
		if err := s.write(full, bytes.NewReader(data), 0o644); err != nil {
			return err
		}
		for d := full; d != "work"; d = path.Dir(d) {
			if err := os.Lchown(filepath.Join(s.fs, filepath.FromSlash(d)), uid, gid); err != nil {
				return fmt.Errorf("stage %s: %w", d, err)
			}
		}
	}
	// Made before the wrapper starts, so nothing in the work folder can be
	// a link yet.
	for _, rel := range w.WorkDirs {
		full := filepath.Join(s.fs, "work", filepath.FromSlash(path.Clean(rel)))
		if err := os.Mkdir(full, 0o700); err != nil {
			return fmt.Errorf("stage work/%s: %w", rel, err)
		}
		if err := os.Lchown(full, uid, gid); err != nil {
			return fmt.Errorf("stage work/%s: %w", rel, err)
		}
	}
	return nil
}
