package exec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/hostsession"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/targets/egress"
	"github.com/gatehouse-dev/gatehouse/targets"
)

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Inspect reads back what is in force: the wrapper's version and exact
// argv, the digests of its policy files, the session namespace's
// ruleset, the probe's view from inside and the init's namespaces read
// from the host.
func (s *session) Inspect(ctx context.Context) (targets.Config, error) {
	if s.Stopped() {
		return targets.Config{}, fmt.Errorf("%s: inspect: %w", s.Name, hostsession.ErrStopped)
	}
	cfg := targets.Config{
		Target:  s.Name,
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
			return cfg, fmt.Errorf("%s: inspect: %w", s.Name, err)
		}
		cfg.Facts["nft_ruleset"] = rules
	}
	if _, ok := s.spec.Files[wire.SandboxPath]; !ok {
		return cfg, nil
	}
	f, err := hostsession.ProbeFacts(ctx, s)
	if err != nil {
		return cfg, fmt.Errorf("%s: inspect: %w", s.Name, err)
	}
	hostsession.MergeFacts(cfg.Facts, f)
	cfg.Mounts = f.Mounts
	// The same namespaces, read from the host: verdicts use these.
	if ns, err := s.OutsideNamespaces(ctx); err != nil {
		cfg.Facts["outside.ns.error"] = err.Error()
	} else {
		for k, v := range ns {
			cfg.Facts["outside.ns."+k] = v
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

// hostUserFacts reads who the sandbox's user is on the host from the
// pinned init ("outside.*" facts, hostsession.OutsideFacts) and words it
// in "host_user". The wrapper is started as the path's uid itself (no user
// namespace of the harness's), so that uid is the host's: an account of
// the machine when one has it, which host_user names.
func (s *session) hostUserFacts(f map[string]string) {
	if c, ok := s.OutsideFacts(f, "the session's init, under the wrapper (pinned at start)"); ok {
		f["host_user"] = describeHostUser(c.HostUID(), s.prof.Identity(s.spec.Path).UID)
	}
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
