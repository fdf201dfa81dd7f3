package steps

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/cucumber/godog"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/hostenv"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/pressure"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// defaultStopLimit applies when the target does not report the profile's.
const defaultStopLimit = 5 * time.Second

// beatWait bounds the wait for a session's first heartbeats; stopGrace
// how long past the limit a stop is watched to learn whether it ends;
// afterReturn how long after the target's stop returned.
const (
	beatWait    = 30 * time.Second
	stopGrace   = 20 * time.Second
	afterReturn = 2 * time.Second
)

// maxRemeasure bounds how often a run whose timing the machine's load
// spoiled is measured again, one at a time.
const maxRemeasure = 2

// DefaultMaxStop is the policy's maximum stop limit when Config.MaxStop is
// not set: no profile's own limit may be longer.
const DefaultMaxStop = 10 * time.Second

func registerStop(sc *godog.ScenarioContext, r *runner) {
	sc.Step(`^Gatehouse stops a session that keeps a heartbeat going from a process that ignores SIGTERM and from a child that escaped its process group, (\d+) times$`, r.stopRuns)
	sc.Step(`^the session stopped acting within the profile's stop limit$`, r.judgeStop)
}

// broker returns the lab's credential broker, nil if the lab has none.
func (r *runner) broker() *lab.Broker { return r.lab().Broker() }

// stopRuns measures n stops, the first of the scenario's own session, the
// others of fresh sessions on the same path, all at once: each run is its
// own session, watched apart (its namespace, its processes, its canary in
// the heartbeats), so running them together measures the same n stops in
// the time of one.
func (r *runner) stopRuns(ctx context.Context, n int) error {
	s, m := current(ctx), multiOf(ctx)
	if s == nil || s.sess == nil || m == nil {
		return errors.New("no session: a 'fresh sandbox session' step must come first")
	}
	if n < 1 || n > 20 {
		return fmt.Errorf("stop runs: %d is not 1..20", n)
	}
	sessions := []*scenario{s}
	for i := 1; i < n; i++ {
		p, err := r.startPeer(ctx)
		if err != nil {
			return err
		}
		sessions = append(sessions, p)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, sess := range sessions {
		wg.Go(func() {
			run, at, err := r.measureStop(ctx, sess, m)
			if err != nil {
				errs[i] = err
				return
			}
			m.mu.Lock()
			m.runs, m.stops, m.stopTags = append(m.runs, run), append(m.stops, at), append(m.stopTags, sess.canary)
			m.mu.Unlock()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return r.remeasure(ctx, m)
}

// remeasure measures again, one at a time (the runs at once add to the
// load), each run whose timing the machine's load spoiled. The first
// stays on record, superseded: what it left or did after it was seen gone
// still counts.
func (r *runner) remeasure(ctx context.Context, m *multi) error {
	for attempt := 0; attempt < maxRemeasure; attempt++ {
		hits := r.cfg.Lab.Hits()
		var spoiled []int
		m.mu.Lock()
		for i, run := range m.runs {
			if run.Superseded != "" {
				continue
			}
			run.Late = lateBeats(hits, run.Session, m.stopTags[i], m.stops[i])
			if why, ok := run.LoadSpoiled(m.stops[i], m.limit, wire.HeartbeatEvery); ok {
				m.runs[i].Superseded = why
				if s := current(ctx); s != nil {
					s.findings = append(s.findings, fmt.Sprintf("stop of %s measured again on a fresh session: %s", run.Session, why))
				}
				spoiled = append(spoiled, i)
			}
		}
		m.mu.Unlock()
		if len(spoiled) == 0 {
			return nil
		}
		for range spoiled {
			p, err := r.startPeer(ctx)
			if err != nil {
				return err
			}
			run, at, err := r.measureStop(ctx, p, m)
			if err != nil {
				return err
			}
			m.mu.Lock()
			m.runs, m.stops, m.stopTags = append(m.runs, run), append(m.stops, at), append(m.stopTags, p.canary)
			m.mu.Unlock()
		}
	}
	return nil
}

// lateBeats are the session's heartbeats that arrived after its stop.
func lateBeats(hits []evidence.Hit, session, tag string, stop time.Time) []evidence.Hit {
	var out []evidence.Hit
	for _, h := range heartbeats(hits, session, tag) {
		if h.Time.After(stop) {
			out = append(out, h)
		}
	}
	return out
}

// stopLimit is the profile's limit, read back from the target, bounded by
// the policy's maximum: a profile cannot make its own stop look fast
// enough by declaring a long limit.
func (r *runner) stopLimit(cfg targets.Config, sess *scenario) time.Duration {
	limit := defaultStopLimit
	if d, err := time.ParseDuration(cfg.Facts["stop_limit"]); err == nil && d > 0 {
		limit = d
	}
	max := r.cfg.MaxStop
	if max <= 0 {
		max = DefaultMaxStop
	}
	if limit > max {
		sess.findings = append(sess.findings, fmt.Sprintf("the profile's stop limit %s is over the policy's maximum %s: judged against %s", limit, max, max))
		limit = max
	}
	return limit
}

// measureStop starts the heartbeat in sess, waits until the endpoint hears
// both processes, sends the stop and watches from outside until the
// session has stopped acting or the limit (plus a margin) has passed.
func (r *runner) measureStop(ctx context.Context, sess *scenario, m *multi) (evidence.StopRun, time.Time, error) {
	run := evidence.StopRun{Session: sess.session, Gone: -1}
	m.mu.Lock()
	netns := m.nets[sess.session].NetnsPath
	m.mu.Unlock()
	if netns == "" || r.cfg.Lab == nil {
		return run, time.Time{}, errors.New("stop-signal observes the session's network namespace and the lab's endpoints: it needs a network (lab or host)")
	}
	cfg, err := sess.sess.Inspect(ctx)
	if err != nil {
		sess.findings = append(sess.findings, "inspect before stop failed: "+err.Error())
	}
	limit := r.stopLimit(cfg, sess)
	m.mu.Lock()
	m.limit = limit
	m.mu.Unlock()
	w := newWatch(netns, r.cfg.Network == NetHost)
	temporary, terr := r.temporaryPaths(sess)
	if terr != nil {
		sess.findings = append(sess.findings, "limits.temporary: "+terr.Error())
	}
	storage := append(append([]string(nil), cfg.Created...), temporary...)
	// Opened before the stop: what is searched after it is what was bound.
	binds := openBinds(cfg, sess.start, storage)
	defer binds.Close()
	run.Unsearched = append(run.Unsearched, binds.unresolved...)
	if err != nil && len(cfg.Argv) == 0 && len(cfg.Mounts) == 0 {
		run.Unsearched = append(run.Unsearched, "the session's read-write binds are unknown: "+err.Error())
	}
	b := r.broker()
	var tok string
	if b != nil {
		if tok, err = b.Issue(sess.session, "stop-signal"); err != nil {
			return run, time.Time{}, fmt.Errorf("issue a broker token: %w", err)
		}
	}

	hbCtx, hbCancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	hbDone := make(chan struct{})
	// The heartbeat plan's runPlan appends to sess's findings and attempts
	// from its goroutine: what this function notes meanwhile waits in
	// notes, and goes in once that goroutine is done, on every return.
	var notes []string
	defer func() {
		hbCancel()
		<-hbDone
		sess.findings = append(sess.findings, notes...)
	}()
	plan := wire.Plan{TimeoutMS: 1000, Steps: []wire.Step{{
		ID: "heartbeat", Kind: wire.KindHeartbeat, Escape: true, DurationMS: 50_000, UseProxy: true,
		Target: "http://" + inferenceAddr + "/v1/complete?hb=" + sess.canary,
		// A write each beat too, where the session's storage is: a write
		// after the stop is the session still acting.
		// Its own file: a folder there may be every session's.
		Path: OwnStorage + "/" + wire.HeartbeatName(sess.canary),
	}}}
	go func() {
		defer close(hbDone)
		_, _ = r.runPlan(hbCtx, sess, plan, 60*time.Second)
	}()
	// On a busy machine the probe can take long to start: wait for both
	// processes' beats as long as it takes, within a bound, and note how
	// busy the machine was meanwhile.
	beatMark := pressure.Now()
	for t0 := time.Now(); time.Since(t0) < beatWait; time.Sleep(50 * time.Millisecond) {
		hs := heartbeats(r.cfg.Lab.Hits(), sess.session, sess.canary)
		if beatFrom(hs, "main", time.Now()) && beatFrom(hs, "child", time.Now()) {
			break
		}
	}
	beatEach, beatWin, beatKnown := pressure.Now().SinceEach(beatMark)
	run.BeatStall, run.BeatWait = beatEach.Max(), beatWin

	stopAt := time.Now()
	stopMark := pressure.Now()
	r.markStopped(sess, stopAt)
	if b != nil {
		b.Revoke(sess.session)
	}
	over, err := r.stopCommand(ctx, sess, netns, limit)
	if err != nil {
		notes = append(notes, "the profile's stop command failed: "+err.Error())
	}
	run.StopCommandOver = over
	stopped := make(chan error, 1)
	go func() { stopped <- sess.sess.Stop(context.WithoutCancel(ctx)) }()
	returned := false
	var returnedAt time.Time
	var last remains
	var goneAt time.Time
	// Past the limit, watch on a while to learn whether it ends at all: a
	// stop slowed by a busy machine is told apart from one that never
	// ends (see evidence.StopRun.LoadSpoiled). Stop once the target's
	// stop returned a moment ago and something is still there.
	deadline := stopAt.Add(limit + 500*time.Millisecond)
	for end := deadline.Add(stopGrace); ; time.Sleep(25 * time.Millisecond) {
		now := time.Now()
		if now.After(end) || (now.After(deadline) && returned && now.Sub(returnedAt) > afterReturn) {
			break
		}
		if !returned {
			select {
			case err := <-stopped:
				returned, returnedAt = true, time.Now()
				if err != nil {
					notes = append(notes, "stop: "+err.Error())
				}
			default:
			}
		}
		if !returned {
			continue
		}
		if last = w.left(ctx, sess); last.none() {
			goneAt = time.Now()
			run.Gone = goneAt.Sub(stopAt)
			break
		}
		if !last.known() {
			break // nothing more to learn by waiting
		}
	}
	if !goneAt.IsZero() && sess.attached {
		// Only a session of its own in the lab can be told drained: for
		// one that is not, Quiet has no address to look at.
		run.Drained = r.drained(ctx, sess.session, stopAt)
	}
	stopEach, window, stopKnown := pressure.Now().SinceEach(stopMark)
	run.CPUStall, run.Window = stopStall(stopEach, stopMark), window
	run.StallKnown = beatKnown && stopKnown
	// Keep watching one more moment: what was seen gone must stay gone.
	if err := r.settle(ctx); err != nil {
		return run, stopAt, err
	}
	hs := heartbeats(r.cfg.Lab.Hits(), sess.session, sess.canary)
	run.MainBefore, run.ChildBefore = beatFrom(hs, "main", stopAt), beatFrom(hs, "child", stopAt)
	switch {
	case run.Gone >= 0:
	case returned && !last.known():
		run.Unknown = "whether its processes were gone could not be seen: " + last.String()
	default:
		run.Left = append(run.Left, w.left(ctx, sess).String())
		if !returned {
			run.Left = append(run.Left, "the target's stop had not returned")
		}
	}
	left, unknown := storageLeft(storage, sess.start)
	run.Left = append(run.Left, left...)
	run.Unsearched = append(run.Unsearched, unknown...)
	// Writes while the stop was under way are like heartbeats then; one
	// after the session was seen gone (a beat's time later) is a process
	// nobody saw, when it carries the session's mark.
	if run.Gone >= 0 {
		// From the wall clock read when it was seen gone, not stopAt +
		// Gone: file times are wall times, and a step of the wall clock
		// during the stop (a VM resumed, NTP) must not move the line.
		since := goneAt.Add(2 * wire.HeartbeatEvery)
		if run.WriteWatch, err = watchWrites(ctx, since); err != nil {
			return run, stopAt, err
		}
		ws := writes(ctx, binds, since, sess.canary)
		// Read after the search: a step during it must be seen too.
		now := time.Now()
		if gap := clockStepWrites(ctx, binds, since, goneAt.Round(0), now.Round(0), now.Sub(goneAt), sess.canary, len(ws.own)); gap != "" {
			run.Unsearched = append(run.Unsearched, gap)
		}
		if len(ws.own) > 0 {
			run.Left = append(run.Left, fmt.Sprintf("%d write(s) after the session was seen gone: %s", len(ws.own), strings.Join(firstN(ws.own, 3), ", ")))
		}
		if len(ws.other) > 0 {
			notes = append(notes, fmt.Sprintf("%d write(s) after %s was seen gone carry no mark of it (another session's, or the host's): not counted against it: %s",
				len(ws.other), sess.session, strings.Join(firstN(ws.other, 3), ", ")))
		}
		run.Unsearched = append(run.Unsearched, ws.unsearched...)
	}
	if b != nil {
		run.TokenChecked = true
		_, err := b.Authorize(tok, sess.session, "", time.Now())
		run.TokenRefused = err != nil
	} else {
		notes = append(notes, "broker not available: the token check was not made")
	}
	// The monitor's word (builtin): what still ran after the stop. A
	// finding beside the outside measurement, which decides the verdict.
	// The harness's own teardown ends whatever the profile's stop left.
	reap(ctx, sess)
	// The monitor's events of the last moments need a settle to arrive;
	// without a monitor there is nothing to wait for.
	if r.det != nil && r.settle(ctx) == nil {
		if alive := r.aliveAfterStop(sess, stopAt); len(alive) > 0 {
			notes = append(notes, fmt.Sprintf("the monitor saw %d process(es) of %s still making system calls after the stop: %s", len(alive), sess.session, strings.Join(firstN(alive, 5), ", ")))
		}
	}
	select {
	case <-hbDone:
	case <-time.After(10 * time.Second):
		notes = append(notes, "heartbeat probe still running 10 s after reap")
		// Its records must be in before the verdict, never after the seal.
		hbCancel()
		<-hbDone
	}
	return run, stopAt, nil
}

// clockStepWrites says which of the session's writes a backward step of
// the wall clock after it was seen gone leaves undecided: file times are
// wall times, and after such a step a write made later than since carries
// an earlier time and the search misses it (a false PASS). The search is
// made again from since moved back by the step (steppedBack, as the
// reusable-state search does); the session's writes found only then may be
// from before it was seen gone or after, so they are said, never counted
// either way: INCONCLUSIVE. goneWall and nowWall are wall readings,
// elapsed the monotonic time between them; own is how many writes the
// search from since found.
func clockStepWrites(ctx context.Context, b bindRoots, since, goneWall, nowWall time.Time, elapsed time.Duration, canary string, own int) string {
	from := steppedBack(since, goneWall, nowWall, elapsed)
	if !from.Before(since) {
		return ""
	}
	wider := writes(ctx, b, from, canary)
	if extra := len(wider.own) - own; extra > 0 {
		return fmt.Sprintf("the wall clock stepped back %s after the session was seen gone, and %d write(s) of the session carry a time within that step, so they may be from before or after it: %s",
			since.Sub(from).Round(time.Millisecond), extra, strings.Join(firstN(wider.own, 3), ", "))
	}
	return ""
}

// A session's binds are searched for writes as it made after it was seen
// gone once writeWatch has passed since, in time the machine let tasks
// run, and never later than maxWriteWatch. A search made right after the
// settle watched for ~50 ms: a worker left behind by the stop, appending
// every 100 ms, was missed whenever its last write fell just before since
// (a false PASS, seen under load). The watch is in the evidence.
const (
	writeWatch    = time.Second
	maxWriteWatch = 4 * writeWatch
)

// stopStall is the wait the stop's load allowance may count: the CPU's
// always; I/O's and memory's only when the machine was already waiting on
// them before the stop (the kernel's ten-second average at the stop, a
// quarter or more). I/O pressure is machine-wide, and the sandbox's own
// teardown (an overlay's removal, fsyncs) waits on I/O: it must not
// excuse its own slowness.
func stopStall(stop pressure.Stalls, atStop pressure.Mark) time.Duration {
	d := stop.CPU
	io, mem := atStop.Avg10()
	if io >= 25 {
		d = max(d, stop.IO)
	}
	if mem >= 25 {
		d = max(d, stop.Memory)
	}
	return d
}

// maxDrain bounds the wait, once a session was seen gone, for the lab to
// record what of it had reached it.
const maxDrain = 2 * time.Second

// drained waits until the lab has recorded everything of the session that
// reached it (lab.Quiet) and says when that was, from stopAt; zero when
// the lab cannot tell or did not drain within maxDrain. A heartbeat sent
// before the session ended but still queued is then on record, and what
// arrives later was sent later.
func (r *runner) drained(ctx context.Context, session string, stopAt time.Time) time.Duration {
	for end := time.Now().Add(maxDrain); time.Now().Before(end); {
		quiet, _, err := r.lab().Quiet(ctx, session)
		if err != nil {
			return 0
		}
		if quiet {
			return time.Since(stopAt)
		}
		select {
		case <-ctx.Done():
			return 0
		case <-time.After(10 * time.Millisecond):
		}
	}
	return 0
}

// watchWrites waits until the binds have been watched long enough since
// since, and says how long that was.
func watchWrites(ctx context.Context, since time.Time) (time.Duration, error) {
	mark := pressure.Now()
	for {
		watched := time.Since(since)
		if stall, _, ok := pressure.Now().Since(mark); ok {
			watched -= stall
		}
		if watched >= writeWatch || time.Since(since) >= maxWriteWatch {
			return time.Since(since), nil
		}
		select {
		case <-ctx.Done():
			return time.Since(since), ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// temporaryPaths are the host paths the profile says its stop removes
// (limits.temporary), expanded for this session.
func (r *runner) temporaryPaths(sess *scenario) ([]string, error) {
	var out []string
	for _, p := range r.cfg.Temporary {
		x, err := targets.Expand(p, targets.Spec{Places: sess.places, Secrets: map[string]string{}})
		if err != nil {
			return out, err
		}
		out = append(out, x)
	}
	return out, nil
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("… %d more", len(s)-n))
	}
	return s
}

// judgeStop re-reads every endpoint now, after the last run's reap and a
// settle: a heartbeat that arrived after a run was seen gone (and after
// observation ended) still counts.
func (r *runner) judgeStop(ctx context.Context) error {
	s, m := current(ctx), multiOf(ctx)
	if s == nil || m == nil {
		return errors.New("no scenario state")
	}
	// The runs' sessions are torn down: nothing more of theirs can reach
	// the lab, only what arrived may still wait in its queues.
	if err := r.settleFor(ctx); err != nil {
		return err
	}
	hits, notReady := r.labHits(ctx)
	x := stopObs{session: s.session, control: s.control, notReady: notReady}
	m.mu.Lock()
	x.runs = append([]evidence.StopRun(nil), m.runs...)
	x.stops = append([]time.Time(nil), m.stops...)
	x.tags = append([]string(nil), m.stopTags...)
	x.limit = m.limit
	for _, p := range m.peers {
		s.findings = append(s.findings, p.findings...)
		p.findings = nil
	}
	m.mu.Unlock()
	s.observed = x
	o := x.with(hits)
	j, timings := evidence.JudgeStop(o)
	res := s.result(j)
	res.Timings = timings
	res.Stops = o.Sent()
	s.hold(res)
	return verdictErr(j)
}

// stopCommand runs the platform's own stop, when the profile names one. Its
// outcome is only a finding: whether the session stopped is measured from
// outside like any other stop. over says it ran out its limit.
func (r *runner) stopCommand(ctx context.Context, sess *scenario, netns string, limit time.Duration) (over bool, err error) {
	argv := r.cfg.StopCommand
	if len(argv) == 0 {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = hostenv.Env(
		"GATEHOUSE_SESSION="+sess.session,
		"GATEHOUSE_NETNS="+netns,
		"GATEHOUSE_TARGET="+r.cfg.Target.Name())
	out, err := cmd.CombinedOutput()
	over = errors.Is(ctx.Err(), context.DeadlineExceeded)
	if err != nil {
		return over, fmt.Errorf("%v: %s", err, firstLine(string(out)))
	}
	return over, nil
}
