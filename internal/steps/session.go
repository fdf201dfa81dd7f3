package steps

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/cucumber/godog"

	"github.com/gatehouse-dev/gatehouse/corpus"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/targets"
)

func registerSession(sc *godog.ScenarioContext, r *runner) {
	sc.Step(`^a fresh sandbox session on the (normal|assume-breach) path$`, r.freshSession)
	sc.Step(`^the agent has read the corpus document "([^"]+)"$`, r.readCorpus)
}

func (r *runner) freshSession(ctx context.Context, path string) error {
	s := current(ctx)
	if s == nil {
		return errors.New("no scenario state")
	}
	s.path = targets.Path(path)
	s.session = r.nextSession()
	s.canary = token("ghc")
	s.control = tag("ghctl")
	spec := targets.Spec{
		Name: s.session,
		Path: s.path,
		// The canary is what an obedient agent would carry out; it is in the
		// environment the way a task's data would be. No proxy is named
		// here: a sandbox with an egress proxy (srt, codex) names its own,
		// which the control uses and the proxy attempts try around; the
		// ignore-proxy attempt goes direct whatever is named.
		Env: map[string]string{
			"GATEHOUSE_CANARY": s.canary,
		},
		Files: map[string]targets.File{wire.SandboxPath: {HostPath: r.cfg.ProbePath, Mode: 0o755}},
	}
	if r.cfg.Agent != nil && s.path == targets.PathNormal {
		// The agent (its binary, its runtime) runs the normal path.
		for p, f := range r.cfg.Agent.Files() {
			spec.Files[p] = f
		}
	}
	r.lab().Track(s.session, s.canary)
	s.tracked = true
	switch r.cfg.Network {
	case NetLab:
		n, err := r.cfg.Lab.Attach(ctx, s.session)
		if err != nil {
			return fmt.Errorf("attach session to the lab: %w", err)
		}
		s.attached = true
		spec.Network = targets.Network(n)
	case NetHost:
		if err := r.cfg.Lab.Sealed(ctx); err != nil {
			return fmt.Errorf("refusing to run in the lab namespace: %w", err)
		}
		spec.Network = targets.Network{NetnsName: "lab", NetnsPath: r.cfg.LabNetns, Resolver: resolverAddr}
	case NetNone:
	default:
		return fmt.Errorf("unknown network mode %q", r.cfg.Network)
	}
	if err := r.addPlaces(ctx, s, &spec); err != nil {
		return err
	}
	if err := r.plantSecrets(ctx, s, &spec); err != nil {
		return err
	}
	s.places = spec.Places
	s.netns = spec.Network.NetnsPath
	sess, err := r.start(ctx, spec)
	if err != nil {
		return err
	}
	s.sess = sess
	r.sessionKeys(ctx, s)
	if sc, ok := sess.(targets.SessionCredentialer); ok {
		// Read while the session is fresh: a wrapper's per-run proxy token
		// is the sandbox's own, not a long-lived secret it exposes.
		creds, err := sc.SessionCredentials(ctx)
		if err != nil {
			s.findings = append(s.findings, "the sandbox's own per-session credentials could not be read: "+err.Error())
		}
		s.sandboxCreds = creds
	}
	r.inspectOnce(ctx, s)
	return nil
}

// start starts the target's session. A session already running may
// write a folder a place lies in (storage-root): each place must still be
// the folder made for it. Targets check again as they bind.
func (r *runner) start(ctx context.Context, spec targets.Spec) (targets.Session, error) {
	if err := targets.CheckPlaces(spec); err != nil {
		return nil, fmt.Errorf("start %s session: %w", r.cfg.Target.Name(), err)
	}
	sess, err := r.cfg.Target.Start(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("start %s session: %w", r.cfg.Target.Name(), err)
	}
	return sess, nil
}

// inspectOnce reads back the effective configuration of the first session
// on each path: the evidence must say what was really applied.
func (r *runner) inspectOnce(ctx context.Context, s *scenario) {
	r.mu.Lock()
	_, done := r.effective[string(s.path)]
	if !done {
		r.effective[string(s.path)] = "pending"
	}
	r.mu.Unlock()
	if done {
		return
	}
	cfg, err := s.sess.Inspect(ctx)
	var v any = cfg
	if err != nil {
		v = map[string]string{"error": err.Error()}
		s.findings = append(s.findings, "inspect failed: "+err.Error())
	}
	r.mu.Lock()
	r.effective[string(s.path)] = v
	r.mu.Unlock()
}

func (r *runner) readCorpus(ctx context.Context, name string) error {
	s := current(ctx)
	if s == nil || s.sess == nil {
		return errors.New("no session: a 'fresh sandbox session' step must come first")
	}
	_, b, err := corpus.Get(name)
	if err != nil {
		return err
	}
	dst := "/gatehouse/inbox/" + name + ".md"
	if err := s.sess.CopyIn(ctx, dst, strings.NewReader(string(b)), fs.FileMode(0o644)); err != nil {
		return fmt.Errorf("place corpus document: %w", err)
	}
	s.corpus = append(s.corpus, name)
	return nil
}
