package steps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/cgroupfs"
	"github.com/gatehouse-dev/gatehouse/internal/hostenv"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// Response is what Gatehouse does on a session's first detection
// (run --respond): Stop revokes the session's identity (its broker
// tokens), network (the lab's end of its link) and compute (the target's
// stop); Hook runs a team's own command instead, given the session's id,
// network namespace, cgroup and pids. Either way the effects are
// measured from outside, never taken from the hook's word.
type Response struct {
	Stop bool
	Hook []string
	// Limit is how long the effects are watched for (DefaultRespondLimit
	// when 0); Poll is the polling resolution (DefaultRespondPoll when 0).
	Limit time.Duration
	Poll  time.Duration
}

const (
	DefaultRespondLimit = 10 * time.Second
	DefaultRespondPoll  = 10 * time.Millisecond
	// egressCheckTimeout bounds one egress check: a check that times out
	// is a refusal seen that much late.
	egressCheckTimeout = 150 * time.Millisecond
	// egressConfirmTimeout is the second look at a check that found egress
	// refused: on a loaded machine a connection within the session's own
	// link took longer than egressCheckTimeout, and a leaky hook's egress
	// was scored refused (issue 22).
	egressConfirmTimeout = 1500 * time.Millisecond
	maxHookOutput        = 4 << 10
)

// egressOpen checks session's egress, and looks again with more time at
// a refusal: a refusal is claimed only when both checks found one.
func egressOpen(ctx context.Context, l Lab, session string) (bool, string, error) {
	open, why, err := l.EgressOpen(ctx, session, egressCheckTimeout)
	if err != nil || open {
		return open, why, err
	}
	return l.EgressOpen(ctx, session, egressConfirmTimeout)
}

// Mode is how results name the response.
func (rs *Response) Mode() string {
	if rs.Stop {
		return "stop"
	}
	return "exec:" + strings.Join(rs.Hook, " ")
}

// responder answers each live session's first detection once.
type responder struct {
	r   *runner
	cfg Response

	mu   sync.Mutex
	live map[string]*scenario     // sessions whose keys are registered
	busy map[string]chan struct{} // in-flight responses, closed when done
	done map[string]*evidence.Response
}

func newResponder(r *runner, cfg *Response) *responder {
	if cfg == nil {
		return nil
	}
	c := *cfg
	if c.Limit <= 0 {
		c.Limit = DefaultRespondLimit
	}
	if c.Poll <= 0 {
		c.Poll = DefaultRespondPoll
	}
	return &responder{r: r, cfg: c, live: map[string]*scenario{}, busy: map[string]chan struct{}{}, done: map[string]*evidence.Response{}}
}

// watch makes s eligible for a response once it has keys.
func (rp *responder) watch(s *scenario) {
	if rp == nil || len(s.keys) == 0 {
		return
	}
	rp.mu.Lock()
	rp.live[s.session] = s
	rp.mu.Unlock()
	// Whether egress is refused already (a hardened profile's policy) is
	// measured now, before the session's first attempt, so that a
	// response starts at once when it comes and a refusal it did not
	// cause is said. It costs a session start at most one check's wait.
	// A lab that cannot check egress (ErrUnsupported) says so here, once:
	// the response's egress effect is then not measured.
	if rp.r.cfg.Network != NetHost && s.netns != "" {
		open, _, err := egressOpen(context.WithoutCancel(rp.r.ctx), rp.r.lab(), s.session)
		s.respMu.Lock()
		switch {
		case errors.Is(err, ErrUnsupported):
			s.egressUnchecked = true
		case err == nil:
			s.egressOpenBefore = &open
		}
		s.respMu.Unlock()
	}
}

// consider is called for every event as it arrives. Only a rule's hit on
// a live session's key triggers; exits and key-less events never do, nor
// a process alive after a stop Gatehouse itself made (the stop-signal
// gate measures that stop; a response must not finish it for the sandbox).
func (rp *responder) consider(e detect.Event) {
	if rp == nil || e.Rule == "" || e.Kind == "" || e.Kind == detect.KindExit || e.Kind == detect.KindAliveAfter {
		return
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	for id, s := range rp.live {
		if _, started := rp.busy[id]; started {
			continue
		}
		if _, answered := rp.done[id]; answered {
			continue
		}
		for _, k := range s.keys {
			if detect.SameSession(e.Key, k) {
				ch := make(chan struct{})
				rp.busy[id] = ch
				s.setResponded()
				go func() {
					defer close(ch)
					res := rp.respond(s, e)
					rp.mu.Lock()
					rp.done[id] = &res
					rp.mu.Unlock()
				}()
				break
			}
		}
	}
}

// quiesce stops s from triggering and waits for its response, if one is
// under way: the teardown must not be measured as the response.
func (rp *responder) quiesce(s *scenario) {
	if rp == nil {
		return
	}
	rp.mu.Lock()
	delete(rp.live, s.session)
	ch := rp.busy[s.session]
	rp.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// take returns the responses recorded for these sessions.
func (rp *responder) take(sessions ...string) []evidence.Response {
	if rp == nil {
		return nil
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	var out []evidence.Response
	for _, id := range sessions {
		if res, ok := rp.done[id]; ok {
			out = append(out, *res)
		}
	}
	return out
}

// respond acts and measures. Every effect's time is the first poll that
// saw it; its latency runs from the alert's receipt.
func (rp *responder) respond(s *scenario, e detect.Event) evidence.Response {
	r := rp.r
	ctx := context.WithoutCancel(r.ctx)
	res := evidence.Response{
		Mode: rp.cfg.Mode(), Session: s.session,
		Trigger: evidence.ResponseTrigger{Source: e.Source, Rule: e.Rule, Kind: e.Kind, Object: e.Object, Received: e.Received},
		PollMS:  float64(rp.cfg.Poll.Microseconds()) / 1000,
	}
	if res.Trigger.Received.IsZero() {
		res.Trigger.Received = time.Now()
	}
	received := res.Trigger.Received
	nl := r.lab()
	shared := r.cfg.Network == NetHost
	b := r.broker()
	tok := ""
	if b != nil {
		var err error
		if tok, err = b.Issue(s.session, "respond"); err != nil {
			res.Notes = append(res.Notes, "no broker token could be issued to check: "+err.Error())
		}
	}
	tokenRefused := func() bool {
		_, err := b.Authorize(tok, s.session, "", time.Now())
		return err != nil
	}
	egressOpen := func() (bool, string) {
		open, why, err := egressOpen(ctx, nl, s.session)
		if err != nil {
			// Cannot tell (ErrUnsupported included): not refused.
			return true, err.Error()
		}
		return open, why
	}
	w := newWatch(s.netns, shared)

	type effect struct {
		name    string
		can     string // why it cannot be measured; "" when it can
		seen    func() (bool, string)
		before  bool
		at      time.Time
		lastWhy string
	}
	effs := []*effect{
		{name: evidence.EffectProcessesGone, seen: func() (bool, string) {
			left := w.left(ctx, s)
			return left.none(), left.String()
		}},
		{name: evidence.EffectEgressRefused, seen: func() (bool, string) {
			open, why := egressOpen()
			return !open, why
		}},
		{name: evidence.EffectTokenRefused, seen: func() (bool, string) { return tokenRefused(), "" }},
	}
	s.respMu.Lock()
	unchecked := s.egressUnchecked
	s.respMu.Unlock()
	switch {
	case shared || s.netns == "":
		effs[1].can = "the session has no link of its own to the lab: egress cannot be checked apart"
	case unchecked:
		effs[1].can = "the lab cannot check a session's egress"
	}
	if b == nil || tok == "" {
		effs[2].can = "the lab has no credential broker: no token to check"
	}
	// What held before the response is said, so a hardened profile's
	// refused egress is not taken for the response's work.
	s.respMu.Lock()
	before := s.egressOpenBefore
	s.respMu.Unlock()
	switch {
	case effs[1].can != "":
	case before == nil:
		res.Notes = append(res.Notes, "whether egress was refused before the response is not known: the session's baseline check failed")
	default:
		effs[1].before = !*before
	}

	res.Started = time.Now()
	type ended struct {
		hook *evidence.HookRun
		note string
	}
	hookDone := make(chan ended, 1)
	if rp.cfg.Stop {
		if b != nil {
			b.Revoke(s.session)
		}
		if !shared {
			if err := nl.Cut(ctx, s.session); errors.Is(err, ErrUnsupported) {
				res.Notes = append(res.Notes, "the lab cannot cut the session's link: the target's stop alone ends its egress")
			} else if err != nil {
				res.Notes = append(res.Notes, "cutting the session's link failed: "+err.Error())
			}
		}
		go func() {
			var e ended
			if err := s.sess.Stop(ctx); err != nil {
				e.note = "stop: " + err.Error()
			}
			hookDone <- e
		}()
	} else {
		go func() { hookDone <- ended{hook: rp.runHook(ctx, s)} }()
	}

	// Monitors that can watch past a stop are told: a process still
	// running after it is then an alive-after-stop event, and the kernel's
	// last exit is a second word on when the processes were gone.
	var watchers []detect.StopWatcher
	if r.det != nil {
		for _, src := range r.det.sources {
			if sw, ok := src.(detect.StopWatcher); ok {
				watchers = append(watchers, sw)
				for _, k := range s.keys {
					_ = sw.MarkStopped(k, res.Started)
				}
			}
		}
	}
	// Each effect is polled on its own: a slow check (an egress check
	// waits for its connection) must not make another look late.
	deadline := res.Started.Add(rp.cfg.Limit)
	var pollers sync.WaitGroup
	for _, ef := range effs {
		if ef.can != "" {
			continue
		}
		pollers.Add(1)
		go func() {
			defer pollers.Done()
			for {
				ok, why := ef.seen()
				if ok {
					ef.at = time.Now()
					return
				}
				ef.lastWhy = why
				if time.Now().After(deadline) {
					return
				}
				time.Sleep(rp.cfg.Poll)
			}
		}()
	}
	pollers.Wait()
	for _, sw := range watchers {
		for _, k := range s.keys {
			ex, err := sw.LastExit(ctx, k)
			if err != nil {
				continue
			}
			if at, gone := ex.Gone(); gone && !at.Before(received) {
				ms := float64(at.Sub(received).Microseconds()) / 1000
				res.KernelGoneMS = &ms
			}
		}
	}
	var end ended
	hookReturned := false
	select {
	case end = <-hookDone:
		hookReturned = true
	default:
	}
	if !hookReturned {
		select {
		case end = <-hookDone:
		case <-time.After(rp.cfg.Limit):
			res.Notes = append(res.Notes, "the response's stop or hook had not returned "+(2*rp.cfg.Limit).String()+" after it began")
		}
	}
	res.Hook = end.hook
	if end.note != "" {
		res.Notes = append(res.Notes, end.note)
	}
	if effs[1].can == "" {
		res.Notes = append(res.Notes, "egress is checked by a TCP connection from the session's namespace to a listener on the lab's end of its link (no endpoint, no hit); each check waits up to "+egressCheckTimeout.String())
	}
	for _, ef := range effs {
		out := evidence.ResponseEffect{Effect: ef.name, Before: ef.before}
		switch {
		case ef.can != "":
			out.Reason = "not measured: " + ef.can
		case ef.at.IsZero():
			out.Reason = fmt.Sprintf("not observed within %s of the response", rp.cfg.Limit)
			if ef.lastWhy != "" {
				out.Reason += ": " + ef.lastWhy
			}
		default:
			out.Observed, out.At = true, ef.at
			ms := float64(ef.at.Sub(received).Microseconds()) / 1000
			out.LatencyMS = &ms
			if ef.before {
				out.Reason = "held already before the response"
			}
		}
		res.Effects = append(res.Effects, out)
	}
	return res
}

// runHook runs the team's response command with the session's facts in
// its environment. Its exit status is recorded; the effects are measured
// from outside regardless.
func (rp *responder) runHook(ctx context.Context, s *scenario) *evidence.HookRun {
	argv := rp.cfg.Hook
	run := &evidence.HookRun{Argv: append([]string(nil), argv...)}
	ctx, cancel := context.WithTimeout(ctx, rp.cfg.Limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	env := hostenv.Env(
		"GATEHOUSE_SESSION="+s.session,
		"GATEHOUSE_NETNS="+s.netns,
		"GATEHOUSE_TARGET="+rp.r.cfg.Target.Name())
	var cg []string
	for _, k := range s.keys {
		if k.CgroupPath != "" {
			// Keys carry the path monitors report (from the cgroup
			// root); a hook wants the folder it can write to.
			if d := cgroupfs.Dir(k.CgroupPath); d != "" {
				cg = append(cg, d)
			}
		}
	}
	env = append(env, "GATEHOUSE_CGROUP="+strings.Join(cg, " "))
	if l, ok := s.sess.(targets.ProcessLister); ok {
		if pids, err := l.Processes(ctx); err == nil {
			ps := make([]string, len(pids))
			for i, p := range pids {
				ps[i] = strconv.Itoa(p)
			}
			env = append(env, "GATEHOUSE_PIDS="+strings.Join(ps, " "))
		}
	}
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	run.Exit = -1
	if cmd.ProcessState != nil {
		run.Exit = cmd.ProcessState.ExitCode()
	}
	if err != nil {
		run.Error = err.Error()
	}
	b := out.Bytes()
	if len(b) > maxHookOutput {
		b = b[:maxHookOutput]
	}
	run.Output = evidence.Redact(string(b))
	return run
}

// setResponded marks s as stopped or acted on by a response: an attempt
// cut short by it is the response's doing, not a target failure.
func (s *scenario) setResponded() {
	s.respMu.Lock()
	s.responded = true
	s.respMu.Unlock()
}

func (s *scenario) wasResponded() bool {
	s.respMu.Lock()
	defer s.respMu.Unlock()
	return s.responded
}
