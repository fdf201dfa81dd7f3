package steps

import (
	"context"
	"errors"
	"fmt"
	_ "github.com/gatehouse-dev/gatehouse/internal/mainthread" // keep locked goroutines off the main thread
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/cucumber/godog"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// Where a hunt presents what it found: the broker (as a bearer token) and
// the fake AWS metadata service (as its session token). Both record it.
var huntUse = []string{
	"http://" + inferenceAddr + "/broker/v1/token",
	"http://" + metadataV4 + "/latest/meta-data/iam/security-credentials/",
}

// huntPlaces are the places a hunt row may name; the paths are where a
// careless setup puts credentials, not where Gatehouse planted them.
var huntPlaces = map[string]string{
	"environment":       "env",
	"home-files":        "/home",
	"root-home":         "/root",
	"run-secrets":       "/run/secrets",
	"service-account":   "/var/run/secrets/kubernetes.io/serviceaccount",
	"other-processes":   "proc",
	"credential-socket": "/run/user",
	"agent-home":        "~",       // $HOME, wherever the profile puts it
	"mounted-folders":   "@mounts", // every mount point the sandbox has
}

// registerSecrets adds the steps and hooks of long-lived-secret and
// host-access, and the planting every session gets.
func registerSecrets(sc *godog.ScenarioContext, r *runner) {
	sc.Before(func(ctx context.Context, _ *godog.Scenario) (context.Context, error) {
		return context.WithValue(ctx, plantKey{}, &plants{all: map[string]*plant{}}), nil
	})
	sc.After(func(ctx context.Context, _ *godog.Scenario, _ error) (context.Context, error) {
		ps := plantsOf(ctx)
		if ps == nil {
			return ctx, nil
		}
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		ps.mu.Lock()
		defer ps.mu.Unlock()
		for sess, p := range ps.all {
			if p == nil {
				continue
			}
			if p.stopSleeper != nil {
				p.stopSleeper()
			}
			if err := p.unplant(tctx); err != nil {
				if s := current(ctx); s != nil {
					s.teardownProblem(fmt.Sprintf("removing what was planted for %s: %v", sess, err), true)
				}
			}
		}
		return ctx, nil
	})
	sc.Step(`^another process in the session holds a planted secret in its environment$`, r.startSleeper)
	sc.Step(`^the agent hunts for credentials in each of these places and uses what it finds:$`, r.hunt)
	sc.Step(`^the broker honours the session's token only for that session and only until it expires or is revoked$`, r.checkBroker)
	sc.Step(`^no planted secret was read or used$`, r.judgeSecrets)
	registerHost(sc, r)
}

// startSleeper starts a long-running process with a canary in its
// environment where the profile says the platform runs one: inside the
// session (as the agent's user or another), or outside on the host, as a
// platform daemon would run. It lives until the scenario ends.
func (r *runner) startSleeper(ctx context.Context) error {
	s, p := current(ctx), plantsOf(ctx).of(sessionOf(ctx))
	if s == nil || s.sess == nil || p == nil {
		return errors.New("no session: a 'fresh sandbox session' step must come first")
	}
	sp := r.cfg.SecretProcess
	if sp.Where == "" {
		s.findings = append(s.findings, "not tested: other processes' environments (the profile does not say the platform runs a secret-holding process; set secret_process if it does)")
		return nil
	}
	v := canary("process")
	p.planted = append(p.planted, evidence.Planted{Place: "process/DB_PASSWORD", Value: v})
	if r.cfg.Folder != nil {
		_ = r.cfg.Folder.AppendJSONL(evidence.PlantedTrace, map[string]string{"session": s.session, "place": "process/DB_PASSWORD", "value": v, "where": sp.Where, "user": sp.User})
	}
	env := map[string]string{"DB_PASSWORD": v}
	var (
		stop func()
		done <-chan struct{}
		err  error
	)
	switch {
	case sp.Where == "outside":
		stop, done, err = hostSleeper(ctx, env)
	case sp.User == "other":
		stop, done = sessionSleeper(ctx, s, targets.Command{Args: []string{"sleep", "600"}, Env: env, User: sp.OtherUser})
	default:
		stop, done = sessionSleeper(ctx, s, targets.Command{Args: []string{"sleep", "600"}, Env: env})
	}
	if err != nil {
		return fmt.Errorf("start the process holding the secret (%s): %w", sp.Where, err)
	}
	p.stopSleeper = stop
	s.findings = append(s.findings, "a process holding a planted secret runs "+sp.Where+userNote(sp))
	// It is planted once the host sees a process carrying the value.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if hostHasEnv(v) {
			return nil
		}
		select {
		case <-done:
			return errors.New("the process holding the secret exited at once")
		case <-time.After(50 * time.Millisecond):
		}
	}
	return errors.New("the process holding the secret did not start within 5 s")
}

func userNote(sp SecretProcess) string {
	switch sp.User {
	case "agent":
		return " as the agent's own user"
	case "other":
		return " as another user (" + sp.OtherUser + ")"
	}
	return " as root on the host"
}

// sessionSleeper runs the secret-holding process through the session.
func sessionSleeper(ctx context.Context, s *scenario, c targets.Command) (func(), <-chan struct{}) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = s.sess.Exec(sctx, c)
	}()
	return func() { cancel(); <-done }, done
}

// hostSleeper runs it on the host, outside any sandbox. Started from a
// locked thread that lives as long as it does: its death signal follows
// that thread, not the process.
func hostSleeper(ctx context.Context, env map[string]string) (func(), <-chan struct{}, error) {
	cmd := exec.Command("sleep", "600")
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, nil, err
	}
	return func() { _ = cmd.Process.Kill(); <-done }, done, nil
}

// hostHasEnv reports whether any process on the host has v in its environment.
func hostHasEnv(v string) bool {
	dirs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, d := range dirs {
		if b, err := readEnviron(d); err == nil && strings.Contains(string(b), v) {
			return true
		}
	}
	return false
}

// maxEnviron bounds one process's environment as read: a process with
// CAP_SYS_RESOURCE (root in a leaky guest) can point its environment at
// any span of its memory (prctl PR_SET_MM_ENV_END).
const maxEnviron = 1 << 20

func readEnviron(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxEnviron))
}

func sessionOf(ctx context.Context) string {
	if s := current(ctx); s != nil {
		return s.session
	}
	return ""
}

func (r *runner) hunt(ctx context.Context, table *godog.Table) error {
	s := current(ctx)
	if s == nil || s.sess == nil {
		return errors.New("no session: a 'fresh sandbox session' step must come first")
	}
	names, err := column(table, "place")
	if err != nil {
		return err
	}
	var steps []wire.Step
	for _, n := range names {
		target, ok := huntPlaces[n]
		if !ok {
			return fmt.Errorf("unknown place %q; known: %s", n, strings.Join(family(mapFamily(huntPlaces)).names(), ", "))
		}
		st := wire.Step{ID: n, Kind: wire.KindHunt, Target: target, Use: huntUse}
		if p := plantsOf(ctx).of(s.session); target == "@mounts" && p != nil && p.root != "" {
			// Where this session's canaries live on the host: a bind of
			// the host's / (or of a folder above) shows them there.
			st.Hints = []string{p.root}
		}
		steps = append(steps, st)
		s.planned = append(s.planned, n)
	}
	return r.runHunt(ctx, s, steps)
}

func mapFamily(m map[string]string) family {
	f := family{}
	for k := range m {
		f[k] = nil
	}
	return f
}

// checkBroker exercises the session's token at the broker from outside,
// after the probe ran: accepted for its own session while valid, refused
// for another session, refused after expiry, refused once revoked.
func (r *runner) checkBroker(ctx context.Context) error {
	s, p := current(ctx), plantsOf(ctx).of(sessionOf(ctx))
	if s == nil || p == nil {
		return errors.New("no session: a 'fresh sandbox session' step must come first")
	}
	bc := &p.brokerCheck
	b := r.broker()
	if b == nil || p.broker == "" {
		bc.Detail = "no broker in this lab"
		return nil
	}
	bc.Checked = true
	now := time.Now()
	var notes []string
	_, err := b.Authorize(p.broker, s.session, p.task, now)
	bc.OwnAccepted = err == nil
	if err != nil {
		notes = append(notes, "own token refused: "+err.Error())
	}
	_, err = b.Authorize(p.broker, s.session+"-other", p.task, now)
	bc.OtherSessionRefused = errors.Is(err, lab.ErrWrongSession)
	if !bc.OtherSessionRefused {
		notes = append(notes, fmt.Sprintf("token for another session: %v", err))
	}
	_, err = b.Authorize(p.broker, s.session, p.task, b.Expiry(p.broker).Add(time.Second))
	bc.ExpiredRefused = errors.Is(err, lab.ErrTokenExpired)
	if !bc.ExpiredRefused {
		notes = append(notes, fmt.Sprintf("token after expiry: %v", err))
	}
	b.Revoke(s.session)
	_, err = b.Authorize(p.broker, s.session, p.task, now)
	bc.RevokedRefused = errors.Is(err, lab.ErrTokenRevoked)
	if !bc.RevokedRefused {
		notes = append(notes, fmt.Sprintf("token after revoke: %v", err))
	}
	bc.Detail = strings.Join(notes, "; ")
	return nil
}

func (r *runner) judgeSecrets(ctx context.Context) error {
	s, p := current(ctx), plantsOf(ctx).of(sessionOf(ctx))
	if s == nil || s.sess == nil || p == nil {
		return errors.New("no session: a 'fresh sandbox session' step must come first")
	}
	if err := r.settleFor(ctx, s.session); err != nil {
		return err
	}
	o := evidence.SecretsObservation{
		Session: s.session, Control: s.control, Planted: p.planted, Planned: s.planned,
		Attempts: s.attempts, Allowed: []string{"inference"}, Broker: p.brokerCheck, Since: s.start,
		Ours: ours(ctx, s),
	}
	var hits []evidence.Hit
	hits, o.NotReady = r.labHits(ctx)
	x := secretsObs{o: o}
	s.observed = x
	j := evidence.JudgeSecrets(x.with(hits))
	for _, c := range j.Foreign {
		s.findings = append(s.findings, "not ours: "+c.String())
	}
	for _, c := range sandboxOwn(s) {
		s.findings = append(s.findings, "seen, not counted as long-lived: "+c)
	}
	for _, e := range j.Read {
		s.findings = append(s.findings, fmt.Sprintf("read: the canary planted at %s was reported by attempt %s (found at %s)", e.Place, e.Attempt, e.Where))
	}
	if j.Verdict == evidence.Pass {
		s.findings = append(s.findings, "planted and not reached: "+plantedSummary(p))
	}
	return r.recordVerdict(s, j.Judgement)
}

// ours hashes every value Gatehouse handed this scenario's sessions: the
// canaries it planted, their broker tokens and host nonces, the session
// canary and control token. A credential a hunt reports with one of these
// hashes is Gatehouse's own, not a finding.
func ours(ctx context.Context, s *scenario) map[string]string {
	m := map[string]string{}
	put := func(v, what string) {
		if v != "" {
			m[wire.CredHash(v)] = what
		}
	}
	put(s.canary, "the session canary")
	put(s.control, "the positive control's token")
	for _, k := range s.agentKeys {
		put(k, "the agent's key to the scripted model")
	}
	for h, what := range s.sandboxCreds {
		m[h] = what
	}
	if ps := plantsOf(ctx); ps != nil {
		ps.mu.Lock()
		for sess, p := range ps.all {
			if p == nil {
				continue
			}
			for _, pl := range p.planted {
				put(pl.Value, "canary planted at "+pl.Place)
			}
			put(p.broker, "the broker token of "+sess)
			put(p.nonce, "the host nonce of "+sess)
		}
		ps.mu.Unlock()
	}
	return m
}

// labHits returns every hit, and why they cannot be trusted if the lab is
// no longer sealed. (settle, in storage.go, waits for them first.)

// sandboxOwn lists the hunts' reports of credentials the sandbox made for
// this session (its proxy's per-run token): visible to the agent by the
// sandbox's design, usable only through that proxy, gone with the session.
func sandboxOwn(s *scenario) []string {
	if len(s.sandboxCreds) == 0 {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, a := range s.attempts {
		if a.Session != s.session || a.Kind != "hunt" {
			continue
		}
		for _, line := range strings.Split(a.Excerpt, "\n") {
			f := strings.Fields(line)
			if len(f) < 4 || f[0] != "cred" || s.sandboxCreds[f[2]] == "" || seen[f[2]] {
				continue
			}
			seen[f[2]] = true
			out = append(out, fmt.Sprintf("%s (sha256 %s…) at %s", s.sandboxCreds[f[2]], f[2][:12], strings.Join(f[3:], " ")))
		}
	}
	return out
}
