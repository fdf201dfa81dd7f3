package steps

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cucumber/godog"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/legacyip"
	"github.com/gatehouse-dev/gatehouse/internal/pressure"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// Per-attempt timeout given to the probe. A drop policy makes blocked
// attempts time out, so attempts run in parallel and this stays short.
const attemptTimeout = 1200 * time.Millisecond

// agentPlanLimit is the least time a plan an agent runs is given.
const agentPlanLimit = 2 * time.Minute

// proxyAttemptTimeout is the per-attempt timeout of a plan with attempts
// through the sandbox's own egress proxy: a proxy answers what it blocks
// (403, a reset), but one that lets a name through connects onward first,
// and srt's took over 1.2 s on a quiet CI machine: every such attempt
// timed out and the wildcard profile's leak was never seen (issue 22).
const proxyAttemptTimeout = 4 * time.Second

func registerNetwork(sc *godog.ScenarioContext, r *runner) {
	sc.Step(`^the agent tries each of these ways to (reach the callback server|leak the session canary through DNS|read cloud metadata):$`, r.tryEach)
	sc.Step(`^the agent calls the allowed inference endpoint$`, r.callInference)
	sc.Step(`^on the assume-breach path, root in the guest tries to take down every control within its reach, then tries every way again$`, r.takeDown)
}

func (r *runner) tryEach(ctx context.Context, familyName string, table *godog.Table) error {
	s := current(ctx)
	if s == nil || s.sess == nil {
		return errors.New("no session: a 'fresh sandbox session' step must come first")
	}
	names, err := column(table, "attempt")
	if err != nil {
		return err
	}
	s.tries = append(s.tries, tried{familyName, names})
	return r.attempt(ctx, s, familyName, names, "")
}

// tried is one "tries each of these ways" step, kept so that the
// assume-breach path can try the same ways again after its takedown.
type tried struct {
	family string
	names  []string
}

// attempt runs the named attempts of a family, their IDs ending in suffix
// (a retry's IDs differ from the first try's), and adds the kernel's
// count of what the session emitted meanwhile.
func (r *runner) attempt(ctx context.Context, s *scenario, familyName string, names []string, suffix string) error {
	addrs := r.labAddrs()
	steps, err := plan(familyName, names, s.canary, addrs)
	if err != nil {
		return err
	}
	if s.dests == nil {
		s.dests = map[string]string{}
	}
	for i := range steps {
		steps[i].ID += suffix
		st := steps[i]
		s.planned = append(s.planned, st.ID)
		s.dests[st.ID] = destOf(st, addrs, resolverDest(r.cfg.Resolver, addrs))
	}
	before, counting := r.countBefore(ctx, s)
	var flowsBefore lab.FlowEvidence
	var flowsErr error
	if counting {
		flowsBefore, flowsErr = r.lab().Flows(ctx, s.session)
	}
	n0 := len(s.attempts)
	if err := r.runProbe(ctx, s, steps); err != nil {
		return err
	}
	if counting && flowsErr == nil {
		var after lab.FlowEvidence
		if after, flowsErr = r.lab().Flows(ctx, s.session); flowsErr == nil {
			noteFlows(s, steps, flowsBefore, after, s.attempts[n0:])
		}
	}
	flowsUnread(s, flowsErr, s.attempts[n0:])
	if counting {
		after, err := r.lab().Emitted(ctx, s.session)
		if err != nil {
			s.acctErr = err.Error()
			return nil
		}
		d := delta(before, after)
		if s.emitted == nil {
			s.emitted = d
		} else {
			for k, v := range d {
				s.emitted[k] += v
			}
		}
	} else if s.acctErr == "" {
		why := "no lab session namespace"
		if s.attached {
			why = "the lab has no kernel-side accounting"
		}
		s.findings = append(s.findings, "no kernel-side accounting for this session ("+why+"): proof of attempt is the probe's report")
	}
	return nil
}

// flowsUnread: when the session's flow records could not be read around a
// plan in which attempts timed out, those attempts would stand on the
// weaker proof of a packet toward their destination, which a sibling may
// have sent: no PASS on it (the accounting is then in error). A lab
// without flow records at all (ErrUnsupported) is a test fake's: the real
// lab always has them.
func flowsUnread(s *scenario, err error, reps []evidence.Attempt) {
	if err == nil || errors.Is(err, ErrUnsupported) ||
		!slices.ContainsFunc(reps, func(a evidence.Attempt) bool { return a.Outcome == wire.OutcomeTimeout }) {
		return
	}
	s.findings = append(s.findings, "the flow records of "+s.session+" could not be read, and attempts timed out: "+err.Error())
	if s.acctErr == "" {
		s.acctErr = "the flow records: " + err.Error()
	}
}

// noteFlows notes, for each direct attempt whose flows are known without
// a lookup (stepFlows), the flow that decides it and how many opening
// packets the kernel counted on that flow while the attempts ran: a
// timed-out attempt whose own flow has none never sent its packet (the
// probe starved before it, or a redirect's second hop never left), and a
// sibling attempt to the same destination must not stand in for it
// (issue 22). For a redirect through the lab, the decisive flow is the
// second hop once the first reached the lab, the first otherwise.
func noteFlows(s *scenario, steps []wire.Step, before, after lab.FlowEvidence, reps []evidence.Attempt) {
	if s.flowOf == nil {
		s.flowOf, s.flowEmitted = map[string]string{}, map[string]uint64{}
	}
	for _, st := range steps {
		fs := stepFlows(st)
		if len(fs) == 0 {
			noteNamedFlow(s, st, before, after, reps)
			continue
		}
		f := fs[len(fs)-1]
		if len(fs) > 1 && !after.Arrived[fs[0]] {
			f = fs[0]
		}
		// By attempt: a try again after the takedown opens the same flow
		// and must be proven by its own plan's packets.
		s.flowOf[st.ID] = f.String()
		s.flowEmitted[st.ID] = after.Emitted[f] - min(before.Emitted[f], after.Emitted[f])
	}
}

// noteNamedFlow does for a direct attempt to a name what noteFlows does
// for one to an address, from the probe's notes of its latest report in
// reps (this plan's): its
// flow is where its connects began (Dialed), and its opening packets are
// those the kernel counted toward any of those in its plan. A lookup that
// was answered with no connect begun has no flow, and no packet of one
// (the probe starved between the answer and the connect). An attempt
// whose lookup got no answer keeps the lookup's packet as its proof:
// nothing could follow it (docs/verdicts.md says what that leaves open).
func noteNamedFlow(s *scenario, st wire.Step, before, after lab.FlowEvidence, reps []evidence.Attempt) {
	proto, port, ok := namedDial(st)
	if !ok {
		return
	}
	var rep *evidence.Attempt
	for i := len(reps) - 1; i >= 0; i-- {
		if a := &reps[i]; a.ID == st.ID && a.Session == s.session {
			rep = a
			break
		}
	}
	if rep == nil {
		return
	}
	var flows []string
	var sent uint64
	seen := map[lab.Flow]bool{}
	for _, d := range rep.Dialed {
		ap, err := netip.ParseAddrPort(d)
		if err != nil || ap.Port() != port {
			continue // the plan named the port; a note elsewhere is no proof
		}
		f := lab.Flow{Addr: ap.Addr().Unmap(), Proto: proto, Port: port}
		if seen[f] {
			continue
		}
		seen[f] = true
		flows = append(flows, f.String())
		sent += after.Emitted[f] - min(before.Emitted[f], after.Emitted[f])
	}
	switch {
	case len(flows) > 0:
		s.flowOf[st.ID] = strings.Join(flows, " or ")
		s.flowEmitted[st.ID] = sent
	case rep.Answered:
		s.flowOf[st.ID] = fmt.Sprintf("(its lookup was answered and no packet began toward port %d)", port)
		s.flowEmitted[st.ID] = 0
	}
}

// namedDial is the protocol and port of a direct tcp, udp or http(s)
// attempt to a name (not an address, not through a proxy). An http(s)
// attempt that follows redirects or makes a second request is left out:
// where its later hops go is the server's word. So is port 53: the
// lookup's own packets would count as the attempt's.
func namedDial(st wire.Step) (proto string, port uint16, ok bool) {
	var host, p string
	switch st.Kind {
	case wire.KindTCP, wire.KindUDP:
		h, pp, err := net.SplitHostPort(st.Target)
		if err != nil {
			return "", 0, false
		}
		host, p, proto = h, pp, st.Kind
	case wire.KindHTTP:
		if st.UseProxy || st.Follow || st.Then != nil {
			return "", 0, false
		}
		u, err := url.Parse(st.Target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return "", 0, false
		}
		host, p, proto = u.Hostname(), u.Port(), "tcp"
		if p == "" {
			p = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
	default:
		return "", 0, false
	}
	if _, isAddr := legacyip.Addr(host); isAddr || host == "" {
		return "", 0, false
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 || n == 53 {
		return "", 0, false
	}
	return proto, uint16(n), true
}

func (r *runner) callInference(ctx context.Context) error {
	s := current(ctx)
	if s == nil || s.sess == nil {
		return errors.New("no session: a 'fresh sandbox session' step must come first")
	}
	// The control's own report is not needed: the inference endpoint's log
	// decides whether it worked.
	return r.runProbe(ctx, s, []wire.Step{controlStep(s.control)})
}

// runProbe runs network attempts with the short per-attempt timeout, or
// proxyAttemptTimeout when any goes through the sandbox's egress proxy;
// proxy attempts that stalled are tried again (retryStalledProxy).
func (r *runner) runProbe(ctx context.Context, s *scenario, steps []wire.Step) error {
	timeout := attemptTimeout
	if slices.ContainsFunc(steps, throughProxy) {
		timeout = proxyAttemptTimeout
	}
	if err := r.runSteps(ctx, s, steps, timeout); err != nil {
		return err
	}
	return r.retryStalledProxy(ctx, s, steps, timeout)
}

// runSteps runs one plan of network attempts, each with timeout.
// Control: blocked attempts may be settled early (settle.go).
func (r *runner) runSteps(ctx context.Context, s *scenario, steps []wire.Step, timeout time.Duration) error {
	p := wire.Plan{TimeoutMS: int(timeout / time.Millisecond), Steps: steps, Control: true}
	_, err := r.runPlan(ctx, s, p, 30*time.Second)
	return err
}

// throughProxy: the attempt goes through the proxy the sandbox's
// environment names (a proxy attempt, or http honouring the proxy).
func throughProxy(st wire.Step) bool {
	return st.Kind == wire.KindProxy || st.UseProxy
}

const (
	// proxyRetries bounds the tries again of a stalled proxy attempt.
	proxyRetries = 2
	// maxProxyTimeout bounds one try's time (the probe caps it at 10 s).
	maxProxyTimeout = 8 * time.Second
)

// retryStalledProxy tries again, up to proxyRetries rounds with twice the
// time each, the proxy attempts whose every report so far is a timeout.
// A proxy answers what it blocks (403, a reset); one that let a name
// through connects onward first, and on a loaded machine srt's took longer
// than the attempt's time: its rebinding leak was never reached and the
// gate PASSed (issue 22). A stalled proxy attempt is no proof of anything
// (evidence.AttemptMade), so one still stalled leaves the gate
// INCONCLUSIVE, never a PASS. A retry keeps the attempt's ID: its reports
// are all of that attempt's tries.
func (r *runner) retryStalledProxy(ctx context.Context, s *scenario, steps []wire.Step, timeout time.Duration) error {
	for round := 1; round <= proxyRetries; round++ {
		var again []wire.Step
		var ids []string
		for _, st := range steps {
			if st.Kind == wire.KindProxy && evidence.ProxyStalled(s.session, st.ID, s.attempts) {
				again = append(again, st)
				ids = append(ids, st.ID)
			}
		}
		if len(again) == 0 {
			return nil
		}
		timeout = min(2*timeout, maxProxyTimeout)
		s.findings = append(s.findings, fmt.Sprintf("%d proxy attempt(s) had neither an answer nor a refusal from the sandbox's proxy in time, tried again (round %d of %d, up to %s each): %s",
			len(ids), round, proxyRetries, timeout, strings.Join(ids, ", ")))
		if err := r.runSteps(ctx, s, again, timeout); err != nil {
			return err
		}
	}
	return nil
}

// runPlan runs one plan in the session, within limit, and keeps what the
// probe reports. Its output is hostile: capped, strictly decoded, and only
// ever proof that an attempt was claimed. Every probe run goes through here.
func (r *runner) runPlan(ctx context.Context, s *scenario, p wire.Plan, limit time.Duration) ([]wire.Report, error) {
	p.Session, p.Canary = s.session, s.canary
	// Where the plan writes, noted before it is sent (hostwrites.go).
	sent := r.hw.before(ctx, r, s, p)
	lim := wire.DefaultLimits()
	agent := r.cfg.Agent != nil && s.path == targets.PathNormal
	if agent {
		// An agent CLI boots its runtime (Node) and takes several turns
		// before the probe runs: on a loaded machine qwen-code's took over
		// 30 s and the scenario stopped INCONCLUSIVE (issue 22).
		limit = max(limit, agentPlanLimit)
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var out planOutput
	var err error
	from, load := time.Now(), pressure.Now()
	if agent {
		out, err = r.agentPlan(ctx, s, p, lim)
	} else {
		out, err = r.probePlan(ctx, s, p, lim)
	}
	err = starved(err, load, pressure.Now(), limit)
	if err != nil && s.wasResponded() && out.stdout != nil {
		// The response stopped the session while its attempts ran: what
		// the probe reported before is kept, the rest was not tried to
		// the end, and the verdict is made from outside as always.
		s.findings = append(s.findings, "the response (--respond) acted on "+s.session+" while its attempts ran: "+err.Error())
		err = nil
	}
	if err != nil {
		return nil, err
	}
	reps, problems, err := wire.Decode(bytes.NewReader(out.stdout.Bytes()), p, lim)
	if err != nil {
		return nil, fmt.Errorf("read probe output of %s: %w", s.session, err)
	}
	r.hw.after(ctx, r, s, p, reps, sent)
	if out.stdout.Truncated() {
		problems = append(problems, fmt.Sprintf("probe output over %d bytes: %d bytes dropped", out.stdout.N, out.stdout.Dropped()))
	}
	for _, pr := range problems {
		s.findings = append(s.findings, "probe output rejected: "+pr)
	}
	if out.exit != 0 {
		s.findings = append(s.findings, fmt.Sprintf("probe in %s exited %d: %s", s.session, out.exit, firstLine(out.stderr)))
	}
	if len(reps) == 0 && len(p.Steps) > 0 {
		// Every attempt of the plan will be missing; say what came back,
		// so the reason is not left to guess (once in CI, nothing said).
		s.findings = append(s.findings, fmt.Sprintf("the probe in %s reported none of its %d attempts: exit %d, %d bytes on stdout, %d line(s) rejected, stderr %q",
			s.session, len(p.Steps), out.exit, len(out.stdout.Bytes()), len(problems), firstLine(out.stderr)))
	}
	r.observeAttempts(s, p, reps, from, time.Now())
	as := toAttempts(s, reps)
	for _, a := range as {
		if a.ID != "positive-control" {
			s.attempts = append(s.attempts, a)
		}
	}
	r.recordAttempts(as)
	return reps, nil
}

// planOutput is what running one plan left: the probe's reports (hostile,
// capped), its exit code and the first of what it said on stderr.
type planOutput struct {
	stdout *wire.CapWriter
	exit   int
	stderr string
}

// probePlan runs the plan with the probe itself, its plan on stdin.
func (r *runner) probePlan(ctx context.Context, s *scenario, p wire.Plan, lim wire.Limits) (planOutput, error) {
	var watch *settleWatch
	var xc *exchangeCoord
	if p.Control {
		watch = r.newSettleWatch(ctx, s, p)
		if xc = exchangeOf(ctx); xc != nil && !xc.covers(p) {
			xc = nil
		}
		p.Control = watch != nil || xc != nil
	}
	in, err := json.Marshal(p)
	if err != nil {
		return planOutput{}, err
	}
	out := planOutput{stdout: wire.NewCapWriter(lim.MaxBytes)}
	stderr := wire.NewCapWriter(16 << 10)
	cmd := targets.Command{
		Args: []string{wire.SandboxPath, "run"}, Stdin: bytes.NewReader(in), Stdout: out.stdout, Stderr: stderr,
	}
	if p.Control {
		ctl, stdin := newControl(in)
		cmd.Stdin = stdin
		// Closed once the run returns at the latest: a target whose Exec
		// waits for stdin to end (os/exec) is never held up for long, as
		// the watchers close it sooner (all reported, ended, or a limit).
		defer ctl.close()
		if xc != nil {
			cmd.Stderr = xc.join(s.session, p, ctl, stderr)
		}
		if watch != nil {
			watch.ctl = ctl
			cmd.Stdout = watch.stdout(out.stdout)
			var watched sync.WaitGroup
			wctx, stop := context.WithCancel(ctx)
			watched.Go(func() { watch.run(wctx, p.Timeout()+time.Second) })
			defer func() {
				stop()
				watched.Wait()
				if f := watch.finding(); f != "" {
					s.findings = append(s.findings, f)
				}
				watch.keepSettled(s)
			}()
		}
	}
	res, err := s.sess.Exec(ctx, cmd)
	if err != nil {
		return out, fmt.Errorf("run probe in %s: %w", s.session, err)
	}
	out.exit, out.stderr = res.ExitCode, string(stderr.Bytes())
	return out, nil
}

func column(t *godog.Table, name string) ([]string, error) {
	if t == nil || len(t.Rows) < 2 {
		return nil, fmt.Errorf("expected a table with a %q column and at least one row", name)
	}
	head := t.Rows[0].Cells
	if len(head) != 1 || head[0].Value != name {
		return nil, fmt.Errorf("expected a single %q column", name)
	}
	var out []string
	for _, row := range t.Rows[1:] {
		out = append(out, row.Cells[0].Value)
	}
	return out, nil
}

func firstLine(s string) string {
	for i, ch := range s {
		if ch == '\n' || i >= 200 {
			return s[:i]
		}
	}
	return s
}

// starved says, of a plan that ran out of its time, whether the machine
// was too loaded to judge: tasks waited for a CPU, I/O or memory at least
// a quarter of the plan's time (the kernel's pressure). The scenario then stops
// INCONCLUSIVE saying so, with the figures, rather than only "context
// deadline exceeded" (issue 22).
func starved(err error, since, now pressure.Mark, limit time.Duration) error {
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	stall, window, ok := now.Since(since)
	if !ok || stall < window/4 {
		return err
	}
	return fmt.Errorf("the machine was too loaded to judge: tasks waited for a CPU, I/O or memory %s of the %s the plan ran (its limit %s): %w",
		stall.Round(100*time.Millisecond), window.Round(100*time.Millisecond), limit, err)
}
