package hostsession

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/internal/hostproc"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// Processes lists, from the host, every process of the session: the
// cgroup.procs of its cgroup and of every cgroup below. A process that
// made its own network or PID namespace is still in the cgroup, and
// cannot leave it without rights over the cgroup tree. Once the cgroup is
// gone (after Stop or Reap killed it empty) the list is empty.
func (s *Session) Processes(ctx context.Context) ([]int, error) {
	if s.cg == nil {
		return nil, fmt.Errorf("%s: processes: no cgroup v2: %w", s.Name, targets.ErrUnsupported)
	}
	var pids []int
	err := filepath.WalkDir(s.cg.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked: it had nothing left
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	if err != nil {
		return pids, fmt.Errorf("%s: processes: %w", s.Name, err)
	}
	return pids, nil
}

// SessionKeys: every process of the session runs in its cgroup (started
// straight into it), so the cgroup's id is what a monitor sees; the
// session's network namespace (its identity read at Start) is the second
// key when it was given one, and the login uid every process inherits the
// third.
func (s *Session) SessionKeys(ctx context.Context) ([]detect.SessionKey, error) {
	var k detect.SessionKey
	if s.cg != nil {
		id, path, err := s.cg.Key()
		if err != nil {
			return nil, fmt.Errorf("%s: session keys: %w", s.Name, err)
		}
		k.CgroupID, k.CgroupPath = id, path
	}
	k.NetnsInode = s.netns.Ino
	k.LoginUID = s.loginuid
	if k == (detect.SessionKey{}) {
		return nil, fmt.Errorf("%s: no cgroup v2 and no session namespace: %w", s.Name, targets.ErrUnsupported)
	}
	return []detect.SessionKey{k}, nil
}

// nsKinds are the namespaces read back from outside.
var nsKinds = []string{"pid", "net", "mnt", "ipc", "uts", "user", "cgroup"}

// OutsideNamespaces reads the sandbox's namespaces from the host: the
// /proc/PID/ns links of the session's init, pinned at Start (pid, start
// time and a pidfd). This is the kernel's word, not the probe's, so a
// lying probe can neither invent nor hide a shared namespace, and a decoy
// cannot stand in for the init. The init is the sandbox's own command:
// every command of the session runs in what it runs in. Once the init is
// gone the read fails (INCONCLUSIVE), never falls back to a search.
func (s *Session) OutsideNamespaces(ctx context.Context) (map[string]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.init == nil {
		return nil, errors.New("the session's init was not pinned at start")
	}
	ns, err := s.init.Namespaces(nsKinds)
	if err != nil {
		return nil, fmt.Errorf("the session's init (pid %d, start %d): %w", s.init.PID, s.init.Start, err)
	}
	return ns, nil
}

// OutsideFacts reads who the sandbox's user is on the host from the pinned
// init, as the kernel says: "outside.role" (role), "outside.pid",
// "outside.start", "outside.cmdline", its ids and its user namespace's
// maps. The numbers change from run to run ("outside.*": volatile in a
// diff); the caller words "host_user" from the ids returned, in stable
// words. When they cannot be read, host_user says why and ok is false.
func (s *Session) OutsideFacts(f map[string]string, role string) (c hostproc.Creds, ok bool) {
	if s.init == nil {
		f["host_user"] = "unknown: the session's init was not pinned at start"
		return c, false
	}
	f["outside.role"] = role
	f["outside.pid"] = strconv.Itoa(s.init.PID)
	f["outside.start"] = strconv.FormatUint(s.init.Start, 10)
	if argv, err := s.init.Cmdline(); err == nil {
		f["outside.cmdline"] = strings.Join(argv, " ")
	}
	c, err := s.init.Creds()
	if err != nil {
		f["host_user"] = "unknown: " + err.Error()
		return c, false
	}
	f["outside.uid"] = ids(c.UID)
	f["outside.gid"] = ids(c.GID)
	f["outside.uid_map"] = c.UIDMap
	f["outside.gid_map"] = c.GIDMap
	return c, true
}

// ids prints a Uid/Gid line: one number when real, effective, saved and
// filesystem ids agree, all four otherwise.
func ids(v [4]int) string {
	if v[0] == v[1] && v[1] == v[2] && v[2] == v[3] {
		return strconv.Itoa(v[0])
	}
	return fmt.Sprintf("%d %d %d %d", v[0], v[1], v[2], v[3])
}

// maxFacts caps what is read from the probe: it runs inside the sandbox,
// so its output is not trusted to be small.
const maxFacts = 1 << 20

// ProbeFacts runs the placed probe's "facts" in the session: the view from
// inside (uid map, capabilities, seccomp, namespaces, mounts).
func ProbeFacts(ctx context.Context, s targets.Session) (wire.Facts, error) {
	out, errb := wire.NewCapWriter(maxFacts), wire.NewCapWriter(4096)
	res, err := s.Exec(ctx, targets.Command{Args: []string{wire.SandboxPath, "facts"}, Stdout: out, Stderr: errb})
	if err != nil {
		return wire.Facts{}, err
	}
	if res.ExitCode != 0 {
		return wire.Facts{}, fmt.Errorf("probe facts: exit %d: %s", res.ExitCode, strings.TrimSpace(string(errb.Bytes())))
	}
	var f wire.Facts
	if err := json.Unmarshal(out.Bytes(), &f); err != nil {
		return wire.Facts{}, fmt.Errorf("probe facts: %w", err)
	}
	return f, nil
}

// MergeFacts adds the probe's facts to an Inspect's.
func MergeFacts(m map[string]string, f wire.Facts) {
	m["uid"] = strconv.Itoa(f.UID)
	m["gid"] = strconv.Itoa(f.GID)
	m["uid_map"] = f.UIDMap
	m["gid_map"] = f.GIDMap
	m["cap_eff"] = f.CapEff
	m["cap_bnd"] = f.CapBnd
	m["seccomp"] = f.Seccomp
	m["no_new_privs"] = f.NoNewPrivs
	m["hostname"] = f.Hostname
	m["kernel"] = f.Kernel
	m["resolv_conf"] = f.Resolv
	m["addrs"] = strings.Join(f.Addrs, ",")
	for k, v := range f.Namespaces {
		m["ns."+k] = v
	}
	if len(f.Errors) > 0 {
		m["probe_errors"] = strings.Join(f.Errors, "; ")
	}
}
