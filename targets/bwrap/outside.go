package bwrap

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/hostproc"
)

// nsKinds are the namespaces read back from outside.
var nsKinds = []string{"pid", "net", "mnt", "ipc", "uts", "user", "cgroup"}

// pinInit finds and pins the session's init at Start: the one process
// under bubblewrap (top, the process we started) running the init binary
// (the same file, by device and inode). Never by name or /proc order:
// later, the sandbox can start processes of its own with that path and
// enough forks to sort first; now, nothing of the sandbox's own has run.
func pinInit(top int, cg *cgroup, initBin string) (*hostproc.Proc, error) {
	var pids []int
	if cg != nil {
		pids = cg.procs()
	} else {
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return hostproc.FindInit(top, pids, initBin)
}

// outsideNamespaces reads the sandbox's namespaces from the host: the
// /proc/PID/ns links of the session's init, pinned at Start (pid, start
// time and a pidfd). This is the kernel's word, not the probe's, so a
// lying probe can neither invent nor hide a shared namespace, and a decoy
// cannot stand in for the init. The init is the sandbox's own command:
// every command of the session runs in what it runs in. Once the init is
// gone the read fails (INCONCLUSIVE), never falls back to a search.
func (s *session) outsideNamespaces(ctx context.Context) (map[string]string, error) {
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

// hostUserFacts reads who the sandbox's user is on the host from the
// pinned init: its ids and its user namespace's maps, as the kernel says.
// "outside.*" facts, with the init's pid and start time beside.
func (s *session) hostUserFacts(f map[string]string) {
	if s.init == nil {
		f["host_user"] = "unknown: the session's init was not pinned at start"
		return
	}
	f["outside.role"] = "the session's init (pinned at start)"
	f["outside.pid"] = strconv.Itoa(s.init.PID)
	f["outside.start"] = strconv.FormatUint(s.init.Start, 10)
	if argv, err := s.init.Cmdline(); err == nil {
		f["outside.cmdline"] = strings.Join(argv, " ")
	}
	c, err := s.init.Creds()
	if err != nil {
		f["host_user"] = "unknown: " + err.Error()
		return
	}
	// The numbers change from run to run ("outside.*": volatile in a
	// diff); host_user says which kind of uid it is, in stable words.
	f["outside.uid"] = ids(c.UID)
	f["outside.gid"] = ids(c.GID)
	f["outside.uid_map"] = c.UIDMap
	f["outside.gid_map"] = c.GIDMap
	f["host_user"] = describeHostUser(c.HostUID(), s.user)
}

// ids prints a Uid/Gid line: one number when real, effective, saved and
// filesystem ids agree, all four otherwise.
func ids(v [4]int) string {
	if v[0] == v[1] && v[1] == v[2] && v[2] == v[3] {
		return strconv.Itoa(v[0])
	}
	return fmt.Sprintf("%d %d %d %d", v[0], v[1], v[2], v[3])
}

// describeHostUser words what the kernel said (uid, read back), checked
// against what the target meant to run as.
func describeHostUser(uid int, meant hostUser) string {
	if uid != meant.uid {
		return fmt.Sprintf("host uid %d, NOT the uid the harness started bubblewrap as (%d)", uid, meant.uid)
	}
	return meant.describe()
}
