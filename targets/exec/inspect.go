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
		cfg.Facts["outside.role"] = "the session's init, under the wrapper"
		cfg.Facts["outside.pid"] = strconv.Itoa(pid)
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
			cfg.Facts["outside.cmdline"] = strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
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

// outsideNamespaces reads the init's /proc/<pid>/ns links from the host:
// the kernel's word, not the probe's. Every command of the session runs in
// what the init runs in.
func (s *session) outsideNamespaces(ctx context.Context) (map[string]string, int, error) {
	if s.cg == nil {
		return nil, 0, errors.New("no cgroup v2: the sandbox's processes cannot be found from outside")
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	pid := findInCgroup(filepath.Base(s.cg.dir), InitPath)
	if pid == 0 {
		return nil, 0, errors.New("the session's init was not found in its cgroup")
	}
	out := map[string]string{}
	for _, k := range nsKinds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, k)); err == nil {
			out[k] = l
		}
	}
	if len(out) == 0 {
		return nil, 0, fmt.Errorf("could not read /proc/%d/ns", pid)
	}
	return out, pid, nil
}

// findInCgroup returns a process in the cgroup named cg (its last path
// element) whose executable is exe (as the process itself sees the path).
func findInCgroup(cg, exe string) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if l, err := os.Readlink(d + "/exe"); err != nil || (l != exe && l != exe+" (deleted)") {
			continue
		}
		b, err := os.ReadFile(d + "/cgroup")
		if err != nil || !inCgroup(string(b), cg) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
			return pid
		}
	}
	return 0
}

func inCgroup(text, cg string) bool {
	for _, line := range strings.Split(text, "\n") {
		p, ok := strings.CutPrefix(line, "0::")
		if ok && (strings.HasSuffix(p, "/"+cg) || strings.Contains(p, "/"+cg+"/")) {
			return true
		}
	}
	return false
}
