package bwrap

import (
	"context"
	"fmt"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/hostsession"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/targets/egress"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// Inspect reads back what is in force: the exact argv, the nftables ruleset
// of the session namespace, and, when the probe was placed, what the probe
// sees from inside (uid map, capabilities, seccomp, namespaces, mounts).
func (s *session) Inspect(ctx context.Context) (targets.Config, error) {
	if s.Stopped() {
		return targets.Config{}, fmt.Errorf("bwrap: inspect: %w", hostsession.ErrStopped)
	}
	cfg := targets.Config{
		Target:  "bwrap",
		Runtime: s.runtime,
		Argv:    s.recordedArgv(),
		Facts: map[string]string{
			"profile":        s.prof.Name,
			"profile_digest": s.prof.Digest(),
			"path":           string(s.spec.Path),
			"netns":          s.spec.Network.NetnsPath,
			"nft_ruleset":    "",
			"stop_limit":     s.prof.StopGrace().String(),
			"stop_scope":     string(s.prof.Scope()),
		},
	}
	cfg.Facts["launch"] = s.launchText()
	cfg.Sources = map[string]string{}
	for _, d := range s.doors {
		cfg.Facts["door."+d.name] = s.doorText(d)
		cfg.Sources[d.path()] = d.host
	}
	// Who the sandbox's user is on the host, read from the pinned init.
	s.hostUserFacts(cfg.Facts)
	cfg.Created = []string{s.st.root}
	if sock, err := s.st.socket(); err == nil {
		cfg.Created = append(cfg.Created, sock)
	}
	if netns := s.spec.Network.NetnsPath; netns != "" {
		rules, err := egress.List(ctx, netns)
		if err != nil {
			return cfg, fmt.Errorf("bwrap: inspect: %w", err)
		}
		cfg.Facts["nft_ruleset"] = rules
	}
	if _, ok := s.spec.Files[wire.SandboxPath]; !ok {
		return cfg, nil
	}
	f, err := hostsession.ProbeFacts(ctx, s)
	if err != nil {
		return cfg, fmt.Errorf("bwrap: inspect: %w", err)
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

// launchText says how bubblewrap was started, beyond its argv: where, and
// as whom.
func (s *session) launchText() string {
	// No per-run number here (a diff of two runs compares this): the uid
	// itself is outside.uid, read back from the kernel.
	who := "root (host uid 0)"
	if !s.user.root() {
		who = "this run's own unprivileged host uid and gid, with no supplementary groups (outside.uid, outside.gid)"
	}
	return fmt.Sprintf("bubblewrap started as %s, in the session's network namespace %s, in a private mount namespace where %s holds only the doors listed as door.* (each bound from a descriptor the harness opened)",
		who, s.spec.Network.NetnsPath, DoorDir)
}

// doorText is what a door is, without per-run folder names: a place by
// the profile's reference, the stage by its role.
func (s *session) doorText(d door) string {
	switch {
	case d.name == "session":
		return "the session's staging folder (fs/), read-only at " + Inside
	case d.name == "session-work":
		return "the session's work folder (fs/work), read-write at " + InsideWork
	case d.name == "init":
		return "the init binary " + d.host
	case d.name == "resolv.conf":
		return "the generated resolver file"
	case strings.HasPrefix(d.name, "place-"):
		return "a harness place the profile names"
	case strings.HasPrefix(d.name, "policy-"):
		return "a policy file of the profile"
	}
	return "a file the run places in the sandbox"
}

// recordedArgv is the exact argv, but for the values of --setenv whose
// profile value is a literal credential: a real secret a team put in its
// profile must not be copied into the evidence (run.json, the report).
// The profile's own bytes, under policy/, are the team's input as given.
func (s *session) recordedArgv() []string {
	out := append([]string(nil), s.prefix...)
	for i := 0; i+2 < len(out); i++ {
		if out[i] != "--setenv" {
			continue
		}
		if shown, redacted := s.prof.ShownEnv(out[i+1]); redacted {
			out[i+2] = shown
		}
		i += 2
	}
	return append(out, "--")
}
