package bwrap

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"

	"github.com/gatehouse-dev/gatehouse/internal/ledger"
	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// Inside is where the staging folder appears in the sandbox. Not /tmp:
// profiles mount a tmpfs there, which would hide it.
const (
	Inside     = "/gatehouse"
	InsideWork = "/gatehouse/work" // writable, shared by every Exec of a session
	// InitPath is where the init binary is bound; the sandbox's command.
	InitPath = "/gatehouse/.init"
)

// stage is a session's folder on the host:
//
//	fs/      bound read-only at /gatehouse (fs/work read-write at /gatehouse/work)
//	policy/  profile files and the generated resolv.conf, never bound whole
//	files/   spec files destined elsewhere, each bound read-only at its path
type stage struct {
	id, root, fs, policy, files string
	release                     []func() // ledger entries of the folder and the socket
	// owner, when set, is given what the harness makes under fs/work: the
	// sandbox's user is then an unprivileged host uid (see handOver).
	owner *hostUser
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
	root, err := os.MkdirTemp(parent, "gatehouse-bwrap-"+unsafeName.ReplaceAllString(name, "_")+"-"+id+"-")
	if err != nil {
		return nil, fmt.Errorf("stage: %w", err)
	}
	s := &stage{id: id, root: root, fs: filepath.Join(root, "fs"), policy: filepath.Join(root, "policy"), files: filepath.Join(root, "files")}
	rel, _ := ledger.Record(ledger.Entry{Kind: ledger.Path, What: root})
	s.release = append(s.release, rel)
	for _, d := range []string{s.fs, filepath.Join(s.fs, "work"), s.policy, s.files} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return s, fmt.Errorf("stage: %w", err)
		}
	}
	return s, nil
}

// initMountPoint makes the empty file the init binary is bound over: the
// read-only /gatehouse cannot get new entries once the sandbox runs.
func (s *stage) initMountPoint() error {
	return os.WriteFile(filepath.Join(s.fs, ".init"), nil, 0o755)
}

// SocketDir holds the inits' listening sockets: a root-only folder on the
// host that no profile of ours binds, with names short enough for a unix
// socket address (the staging folder's path may not be).
const SocketDir = "/run/gatehouse/init"

// socket is where the supervisor's listening socket lives.
func (s *stage) socket() (string, error) {
	if err := os.MkdirAll(SocketDir, 0o700); err != nil {
		return "", fmt.Errorf("stage: %w", err)
	}
	sock := filepath.Join(SocketDir, s.id+".sock")
	if len(s.release) < 2 {
		rel, _ := ledger.Record(ledger.Entry{Kind: ledger.Path, What: sock})
		s.release = append(s.release, rel)
	}
	return sock, nil
}

// bind is one read-only bind the target adds: host path -> inside path.
type bind struct{ host, inside string }

// placeAll writes the spec's files; those outside /gatehouse become binds.
func (s *stage) placeAll(files map[string]targets.File) ([]bind, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var binds []bind
	for i, inside := range names {
		f := files[inside]
		if f.Bind && f.HostPath != "" {
			b, err := s.bindAsIs(inside, f.HostPath)
			if err != nil {
				return nil, err
			}
			binds = append(binds, b)
			continue
		}
		data := f.Data
		if f.HostPath != "" {
			var err error
			if data, err = os.ReadFile(f.HostPath); err != nil {
				return nil, fmt.Errorf("stage %s: %w", inside, err)
			}
		}
		mode := f.Mode.Perm()
		if mode == 0 {
			mode = 0o644
		}
		if rel, ok := underInside(inside); ok {
			if err := s.write(rel, bytes.NewReader(data), mode); err != nil {
				return nil, err
			}
			continue
		}
		if !path.IsAbs(inside) || path.Clean(inside) != inside {
			return nil, fmt.Errorf("stage: %q is not a clean absolute path", inside)
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

// bindAsIs plans a read-only bind of a host file or folder with no copy
// (targets.File.Bind). Under /gatehouse, whose staging copy is bound
// read-only, the mount point is made in the stage first.
func (s *stage) bindAsIs(inside, host string) (bind, error) {
	if !path.IsAbs(inside) || path.Clean(inside) != inside {
		return bind{}, fmt.Errorf("stage: %q is not a clean absolute path", inside)
	}
	st, err := os.Stat(host)
	if err != nil {
		return bind{}, fmt.Errorf("stage %s: %w", inside, err)
	}
	if rel, ok := underInside(inside); ok {
		root, err := os.OpenRoot(s.fs)
		if err != nil {
			return bind{}, fmt.Errorf("stage: %w", err)
		}
		defer root.Close()
		dir := rel
		if !st.IsDir() {
			dir = path.Dir(rel)
		}
		if dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return bind{}, fmt.Errorf("stage %s: %w", inside, err)
			}
		}
		if !st.IsDir() {
			f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE, 0o755)
			if err != nil {
				return bind{}, fmt.Errorf("stage %s: %w", inside, err)
			}
			f.Close()
		}
	}
	return bind{host: host, inside: inside}, nil
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
	owner := s.owner
	if !strings.HasPrefix(rel, "work/") {
		owner = nil // read-only inside: root's, readable as its mode says
	}
	if dir := path.Dir(rel); dir != "." {
		if err := mkdirOwned(d, dir, owner); err != nil {
			return fmt.Errorf("stage %s: %w", rel, err)
		}
	}
	var give func(*os.File) error
	if owner != nil {
		give = func(f *os.File) error { return chownOnly(f, owner) }
	}
	if err := d.WriteFileWith(rel, r, mode.Perm(), give); err != nil {
		return fmt.Errorf("stage %s: %w", rel, err)
	}
	return nil
}

// chownOnly gives f to owner unless it has another name: a hard link the
// sandbox made to a file it does not own must not hand that file over.
func chownOnly(f *os.File, owner *hostUser) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	if st.Nlink != 1 || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return fmt.Errorf("%s has %d names or is not a regular file: not handed to the sandbox's user", f.Name(), st.Nlink)
	}
	return f.Chown(owner.uid, owner.gid)
}

// mkdirOwned makes dir and its missing parents under d, giving the ones
// it makes to owner (nil: root keeps them). No link the sandbox planted is
// followed on the way; Lchown never follows one either.
func mkdirOwned(d *untrusted.Dir, dir string, owner *hostUser) error {
	if owner == nil {
		return d.MkdirAll(dir, 0o755)
	}
	cur := ""
	for _, part := range strings.Split(dir, "/") {
		cur = path.Join(cur, part)
		if _, err := d.Lstat(cur); err == nil {
			continue
		}
		err := d.Mkdir(cur, 0o755)
		if err == nil {
			err = d.Lchown(cur, owner.uid, owner.gid)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// policyFile writes a profile file (or generated one) under policy/.
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

func (s *stage) remove() error {
	if s == nil {
		return nil
	}
	if err := os.RemoveAll(s.root); err != nil {
		return fmt.Errorf("stage: remove: %w", err)
	}
	if err := os.Remove(filepath.Join(SocketDir, s.id+".sock")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("stage: remove: %w", err)
	}
	for _, rel := range s.release {
		rel()
	}
	s.release = nil
	return nil
}
