package exec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/hostproc"
	"github.com/gatehouse-dev/gatehouse/probe"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/egress"
)

// maxFacts caps what Inspect reads from the probe: it runs inside the
// sandbox, so its output is not trusted to be small.
const maxFacts = 1 << 20

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Inspect reads back what is in force: the wrapper's version and exact
// argv, the digests of its policy files, the session namespace's
// ruleset, the probe's view from inside and the init's namespaces read
// from the host.
func (s *session) Inspect(ctx context.Context) (targets.Config, error) {
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if stopped {
		return targets.Config{}, fmt.Errorf("%s: inspect: %w", s.name, errStopped)
	}
	cfg := targets.Config{
		Target:  s.name,
		Runtime: s.runtime,
		Argv:    append([]string(nil), s.argv...),
		Created: []string{s.st.root},
		Facts: map[string]string{
			"profile":        s.prof.Name,
			"profile_digest": s.prof.Digest(),
			"path":           string(s.spec.Path),
			"netns":          s.spec.Network.NetnsPath,
			"nft_ruleset":    "",
			"stop_limit":     s.prof.StopGrace().String(),
			"stop_scope":     string(s.prof.Scope()),
			"wrapper_env":    envNames(s.env),
		},
	}
	// Who the sandbox's user is on the host, read from the pinned init.
	s.hostUserFacts(cfg.Facts)
	for name, d := range s.policy {
		cfg.Facts["policy."+name] = d
	}
	if netns := s.spec.Network.NetnsPath; netns != "" {
		rules, err := egress.List(ctx, netns)
		if err != nil {
			return cfg, fmt.Errorf("%s: inspect: %w", s.name, err)
		}
		cfg.Facts["nft_ruleset"] = rules
	}
	if _, ok := s.spec.Files[probe.SandboxPath]; !ok {
		return cfg, nil
	}
	f, err := s.probeFacts(ctx)
	if err != nil {
		return cfg, fmt.Errorf("%s: inspect: %w", s.name, err)
	}
	mergeFacts(cfg.Facts, f)
	cfg.Mounts = f.Mounts
	if ns, pid, err := s.outsideNamespaces(ctx); err != nil {
		cfg.Facts["outside.ns.error"] = err.Error()
	} else {
		for k, v := range ns {
			cfg.Facts["outside.ns."+k] = v
		}
		cfg.Facts["outside.role"] = "the session's init, under the wrapper (pinned at start)"
		cfg.Facts["outside.pid"] = strconv.Itoa(pid)
		if argv, err := s.init.Cmdline(); err == nil {
			cfg.Facts["outside.cmdline"] = strings.Join(argv, " ")
		}
	}
	return cfg, nil
}

// envNames lists the names (not values: a profile may hand the wrapper a
// credential) of the wrapper's environment.
func envNames(env []string) string {
	names := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

func (s *session) probeFacts(ctx context.Context) (probe.Facts, error) {
	out, errb := probe.NewCapWriter(maxFacts), probe.NewCapWriter(4096)
	res, err := s.Exec(ctx, targets.Command{Args: []string{probe.SandboxPath, "facts"}, Stdout: out, Stderr: errb})
	if err != nil {
		return probe.Facts{}, err
	}
	if res.ExitCode != 0 {
		return probe.Facts{}, fmt.Errorf("probe facts: exit %d: %s", res.ExitCode, strings.TrimSpace(string(errb.Bytes())))
	}
	var f probe.Facts
	if err := json.Unmarshal(out.Bytes(), &f); err != nil {
		return probe.Facts{}, fmt.Errorf("probe facts: %w", err)
	}
	return f, nil
}

func mergeFacts(m map[string]string, f probe.Facts) {
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

// nsKinds are the namespaces read back from outside.
var nsKinds = []string{"pid", "net", "mnt", "ipc", "uts", "user", "cgroup"}

// pinInit finds and pins the session's init at Start: the one process
// under the wrapper (top, the process we started) running the init binary
// (the same file, by device and inode), among the session's processes.
// Never by name or /proc order: later, the sandbox can start processes of
// its own at the init's path; now, nothing of the sandbox's own has run.
func (s *session) pinInit(ctx context.Context, top int) (*hostproc.Proc, error) {
	var pids []int
	if s.cg != nil {
		var err error
		if pids, err = s.Processes(ctx); err != nil {
			return nil, err
		}
	} else {
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return hostproc.FindInit(top, pids, s.initBin)
}

// outsideNamespaces reads the init's /proc/PID/ns links from the host:
// the kernel's word, not the probe's, of the init pinned at Start. Every
// command of the session runs in what the init runs in. Once the init is
// gone the read fails (INCONCLUSIVE), never falls back to a search.
func (s *session) outsideNamespaces(ctx context.Context) (map[string]string, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if s.init == nil {
		return nil, 0, errors.New("the session's init was not pinned at start")
	}
	ns, err := s.init.Namespaces(nsKinds)
	if err != nil {
		return nil, 0, fmt.Errorf("the session's init (pid %d, start %d): %w", s.init.PID, s.init.Start, err)
	}
	return ns, s.init.PID, nil
}

// hostUserFacts reads who the sandbox's user is on the host from the
// pinned init: its ids and its user namespace's maps, as the kernel says.
// The wrapper is started as the path's uid itself (no user namespace of
// the harness's), so that uid is the host's: an account of the machine
// when one has it, which host_user names.
func (s *session) hostUserFacts(f map[string]string) {
	if s.init == nil {
		f["host_user"] = "unknown: the session's init was not pinned at start"
		return
	}
	f["outside.start"] = strconv.FormatUint(s.init.Start, 10)
	c, err := s.init.Creds()
	if err != nil {
		f["host_user"] = "unknown: " + err.Error()
		return
	}
	f["outside.uid"] = ids(c.UID)
	f["outside.gid"] = ids(c.GID)
	f["outside.uid_map"] = c.UIDMap
	f["outside.gid_map"] = c.GIDMap
	f["host_user"] = describeHostUser(c.HostUID(), s.prof.Identity(s.spec.Path).UID)
}

// ids prints a Uid/Gid line: one number when real, effective, saved and
// filesystem ids agree, all four otherwise.
func ids(v [4]int) string {
	if v[0] == v[1] && v[1] == v[2] && v[2] == v[3] {
		return strconv.Itoa(v[0])
	}
	return fmt.Sprintf("%d %d %d %d", v[0], v[1], v[2], v[3])
}

// describeHostUser words the uid the kernel reports for the init, against
// the uid the wrapper was started as, naming the machine's account.
func describeHostUser(uid, started int) string {
	var what string
	switch {
	case uid == 0:
		what = "host root (uid 0)"
	default:
		what = fmt.Sprintf("host uid %d", uid)
		if name, home, ok := account(uid); ok {
			what += fmt.Sprintf(", the machine's account %s (home %s)", name, home)
		} else {
			what += ", no account on this machine"
		}
	}
	if uid == started {
		return what + ": the uid the wrapper was started as (the profile's), kept by its sandbox"
	}
	return fmt.Sprintf("%s: the wrapper was started as uid %d, and its sandbox runs the init as %d", what, started, uid)
}

// account finds uid in /etc/passwd.
func account(uid int) (name, home string, ok bool) {
	b, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return "", "", false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 6 && f[2] == strconv.Itoa(uid) {
			return f[0], f[5], true
		}
	}
	return "", "", false
}
