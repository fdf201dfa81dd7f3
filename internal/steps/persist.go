package steps

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cucumber/godog"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// The reusable-state gate: two sessions of one profile, one after the
// other. The earlier leaves a value of its own in everything that might
// outlive it and is torn down; the later writes its own value into the
// same places (so each search is shown to see its place), searches them
// and every mount point it can read, and must not find the earlier's.

type persistKey struct{}

// persistState is the gate's per-scenario state.
type persistState struct {
	values   map[string]string // the value each session left, by session
	places   []evidence.PersistPlace
	ways     map[string]persistWay // by place name, mounts included
	earlier  *scenario
	later    *scenario
	reports  []wire.Report // the later session's searches
	gone     bool          // the earlier was shown to be gone
	problem  string        // why not
	goneAt   time.Time
	laterAt  time.Time
	searched bool
	since    time.Time // the later session's searches read files changed since
	sent     time.Time // when the earlier's stash plan was sent (with Go's monotonic reading)
	// tag names this scenario's files where the name means nothing to an
	// agent (gatehouse-state-TAG): the two paths run at once and, in a
	// shared /tmp, the first to create a file of a fixed name decided
	// whether the other (another uid) could write there at all.
	tag string
}

// stateTag is a fresh scenario tag: distinct across scenarios and runs,
// and not of a value's shape, so no search reports it.
func stateTag() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// named gives a place's file this scenario's tag, unless its name is what
// makes it a place (an AGENTS.md, a CLAUDE.md).
func (ps *persistState) named(w persistWay) persistWay {
	switch {
	case strings.HasSuffix(w.file, "/gatehouse-state"), strings.HasSuffix(w.file, "/.gatehouse-state"), strings.HasSuffix(w.file, "/gatehouse/state"):
		w.file += "-" + ps.tag
	}
	return w
}

func persistOf(ctx context.Context) *persistState {
	p, _ := ctx.Value(persistKey{}).(*persistState)
	return p
}

// persistWay is one place: the file each session appends its value to and
// the folder the later session searches.
type persistWay struct{ file, root string }

// persistPlaces are the rows a reusable-state table may name: caches,
// configuration and agent-instruction files in the home and the
// workspace, the shared scratch folders, and the agent's cache folder.
// "writable-mounts" (see writableMounts) adds every writable mount point
// the session's read-back configuration lists.
var persistPlaces = map[string]persistWay{
	"home-file":        {"~/.gatehouse-state", "~"},
	"home-cache":       {"~/.cache/gatehouse/state", "~/.cache"},
	"pip-cache":        {"~/.cache/pip/gatehouse-state", "~/.cache/pip"},
	"npm-cache":        {"~/.npm/_cacache/gatehouse-state", "~/.npm"},
	"config":           {"~/.config/gatehouse/state", "~/.config"},
	"claude-home":      {"~/.claude/CLAUDE.md", "~/.claude"},
	"codex-home":       {"~/.codex/AGENTS.md", "~/.codex"},
	"workspace":        {OwnStorage + "/gatehouse-state", OwnStorage},
	"workspace-agents": {OwnStorage + "/AGENTS.md", OwnStorage},
	"workspace-claude": {OwnStorage + "/.claude/CLAUDE.md", OwnStorage + "/.claude"},
	"tmp":              {"/tmp/gatehouse-state", "/tmp"},
	"var-tmp":          {"/var/tmp/gatehouse-state", "/var/tmp"},
	"dev-shm":          {"/dev/shm/gatehouse-state", "/dev/shm"},
	"var-cache":        {"/var/cache/agent/gatehouse-state", "/var/cache"},
}

// everywhere is the ID of the later session's search of every mount point.
const everywhere = "search-everywhere"

func registerPersist(sc *godog.ScenarioContext, r *runner) {
	sc.Before(func(ctx context.Context, _ *godog.Scenario) (context.Context, error) {
		return context.WithValue(ctx, persistKey{}, &persistState{values: map[string]string{}, ways: map[string]persistWay{}, tag: stateTag()}), nil
	})
	sc.Step(`^the agent leaves its value in each of these places, and its session is stopped and torn down:$`, r.leaveState)
	sc.Step(`^a later sandbox session of the same profile starts on the same path$`, r.laterSession)
	sc.Step(`^the later session leaves its own value in the same places, then searches them and every mount point it can read$`, r.searchState)
	sc.Step(`^the later session calls the allowed inference endpoint$`, r.laterControl)
	sc.Step(`^the later session found none of the earlier session's values$`, r.judgePersist)
}

// stashPlan has a session append its value to every place's file.
func (ps *persistState) stashPlan(v string) wire.Plan {
	steps := make([]wire.Step, 0, len(ps.places))
	for _, p := range ps.places {
		steps = append(steps, wire.Step{ID: p.Stash, Kind: wire.KindStash, Target: ps.ways[p.Name].file,
			Payload: "Note for the next session: " + v + "\n"})
	}
	return wire.Plan{TimeoutMS: 4000, Parallel: 4, Steps: steps}
}

func (r *runner) leaveState(ctx context.Context, table *godog.Table) error {
	s, m, ps := current(ctx), multiOf(ctx), persistOf(ctx)
	if s == nil || s.sess == nil || m == nil || ps == nil {
		return errors.New("no session: a 'fresh sandbox session' step must come first")
	}
	names, err := column(table, "place")
	if err != nil {
		return err
	}
	for _, n := range names {
		if n == "writable-mounts" {
			cfg, err := s.sess.Inspect(ctx)
			if err != nil {
				return fmt.Errorf("read back %s's mounts: %w", s.session, err)
			}
			for _, pt := range writableMounts(cfg.Mounts) {
				ps.add("mount:"+pt, ps.named(persistWay{file: strings.TrimSuffix(pt, "/") + "/gatehouse-state", root: pt}))
			}
			continue
		}
		w, ok := persistPlaces[n]
		if !ok {
			return fmt.Errorf("unknown place %q; known: writable-mounts, %s", n, strings.Join(mapWays(persistPlaces).names(), ", "))
		}
		ps.add(n, ps.named(w))
	}
	ps.earlier = s
	v := token("ghst")
	ps.values[s.session] = v
	for _, p := range ps.places {
		s.planned = append(s.planned, p.Stash)
	}
	sent := time.Now()
	reps, err := r.runPlan(ctx, s, ps.stashPlan(v), 30*time.Second)
	if err != nil {
		return err
	}
	ps.since, ps.sent = changedSince(sent, reps), sent
	// Stopped and torn down as the harness does at a scenario's end, and
	// shown to have left no process, before anything else starts.
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	before := len(s.leftover)
	reap(tctx, s)
	r.teardown(tctx, s)
	checkGone(tctx, s)
	s.attached, s.tracked = false, false // done: the scenario's own teardown must not repeat them
	ps.goneAt = time.Now()
	ps.gone = len(s.leftover) == before
	if !ps.gone {
		ps.problem = strings.Join(s.leftover[before:], "; ")
	}
	m.freeSlot(s.session)
	return nil
}

func (ps *persistState) add(name string, w persistWay) {
	if _, dup := ps.ways[name]; dup {
		return
	}
	ps.ways[name] = w
	ps.places = append(ps.places, evidence.PersistPlace{Name: name, Stash: "stash-" + name, Search: "search-" + name})
}

func mapWays(m map[string]persistWay) family {
	f := family{}
	for k := range m {
		f[k] = nil
	}
	return f
}

// maxPersistMounts bounds the writable mount points written to.
const maxPersistMounts = 32

// kernelTypes are file systems that hold kernel state, not files a
// session could leave behind.
var kernelTypes = map[string]bool{
	"proc": true, "sysfs": true, "devpts": true, "mqueue": true, "cgroup": true, "cgroup2": true,
	"debugfs": true, "tracefs": true, "securityfs": true, "bpf": true, "pstore": true,
	"efivarfs": true, "binfmt_misc": true, "autofs": true, "fusectl": true, "configfs": true,
	"nsfs": true, // a namespace handle (/run/netns/NAME) is a file, never a place
}

// writableMounts picks the writable folders' mount points out of a
// read-back configuration's mounts ("POINT FSTYPE OPTIONS" lines): the
// session's own view of what it may write, binds of host folders included,
// whatever path they were given.
func writableMounts(mounts []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range mounts {
		f := strings.Fields(l)
		if len(f) < 3 || strings.Contains(f[0], `\`) || kernelTypes[f[1]] {
			continue
		}
		if opts := strings.Split(f[2], ","); opts[0] != "rw" {
			continue
		}
		pt := f[0]
		under := func(root string) bool { return pt == root || strings.HasPrefix(pt, root+"/") }
		switch {
		case under("/dev/shm"):
		case under("/proc"), under("/sys"), under("/dev"), under("/gatehouse"):
			continue
		case under("/run/netns"), under("/var/run/netns"):
			// The host's namespace handles, where a sandbox shows the
			// host's /run: a file or folder there breaks `ip netns` for
			// every run on the host ("Peer netns reference is invalid").
			continue
		}
		if !seen[pt] {
			seen[pt] = true
			out = append(out, pt)
		}
	}
	sort.Strings(out)
	if len(out) > maxPersistMounts {
		out = out[:maxPersistMounts]
	}
	return out
}

func (r *runner) laterSession(ctx context.Context) error {
	ps := persistOf(ctx)
	if ps == nil || ps.earlier == nil {
		return errors.New("the earlier session must leave its value first")
	}
	p, err := r.startPeer(ctx)
	if err != nil {
		return err
	}
	ps.later, ps.laterAt = p, time.Now()
	return nil
}

func (r *runner) searchState(ctx context.Context) error {
	ps, m := persistOf(ctx), multiOf(ctx)
	if ps == nil || ps.later == nil || m == nil {
		return errors.New("a later session must start first")
	}
	b := ps.later
	v := token("ghst")
	ps.values[b.session] = v
	for _, p := range ps.places {
		b.planned = append(b.planned, p.Stash)
	}
	if _, err := r.runPlan(ctx, b, ps.stashPlan(v), 30*time.Second); err != nil {
		return err
	}
	m.mu.Lock()
	root := m.root
	m.mu.Unlock()
	since := ps.since
	if !ps.sent.IsZero() {
		now := time.Now()
		since = steppedBack(ps.since, ps.sent.Round(0), now.Round(0), now.Sub(ps.sent))
		if since.Before(ps.since) {
			b.findings = append(b.findings, fmt.Sprintf("the wall clock stepped back %s since the earlier session's writes: its searches read files changed since %s instead",
				ps.since.Sub(since).Round(time.Millisecond), since.UTC().Format(time.RFC3339Nano)))
		}
	}
	var steps []wire.Step
	for _, p := range ps.places {
		steps = append(steps, wire.Step{ID: p.Search, Kind: wire.KindFind, Target: ps.ways[p.Name].root, ChangedSince: since})
	}
	// Every mount point, and the scenario's host folders under each (a
	// bind of a folder above them shows them there), as the hunts do.
	steps = append(steps, wire.Step{ID: everywhere, Kind: wire.KindFind, Target: "@mounts", Hints: []string{root}, ChangedSince: since})
	for _, st := range steps {
		b.planned = append(b.planned, st.ID)
	}
	reps, err := r.runPlan(ctx, b, wire.Plan{TimeoutMS: int(huntTimeout / time.Millisecond), Parallel: 4, Steps: steps}, 60*time.Second)
	ps.reports = append(ps.reports, reps...)
	ps.searched = err == nil
	return err
}

func (r *runner) laterControl(ctx context.Context) error {
	ps := persistOf(ctx)
	if ps == nil || ps.later == nil {
		return errors.New("a later session must start first")
	}
	_, err := r.runPlan(ctx, ps.later, wire.Plan{TimeoutMS: int(attemptTimeout / time.Millisecond), Steps: []wire.Step{controlStep(ps.later.control)}}, 30*time.Second)
	return err
}

func (r *runner) judgePersist(ctx context.Context) error {
	s, ps := current(ctx), persistOf(ctx)
	if s == nil || ps == nil || ps.earlier == nil || ps.later == nil {
		return errors.New("two sessions, one after the other, are needed")
	}
	if err := r.settle(ctx); err != nil {
		return err
	}
	a, b := ps.earlier, ps.later
	o := evidence.PersistObservation{
		Earlier:   evidence.Party{Session: a.session, Value: ps.values[a.session], Planned: a.planned},
		Later:     evidence.Party{Session: b.session, Value: ps.values[b.session], Control: b.control, Planned: b.planned},
		Places:    ps.places,
		Attempts:  append(append([]evidence.Attempt(nil), a.attempts...), b.attempts...),
		Sightings: sightings([]*party{{s: b, reports: ps.reports}}),
		Gone:      ps.gone && ps.laterAt.After(ps.goneAt),
		Allowed:   []string{"inference"},
	}
	if ps.searched {
		o.Everywhere = everywhere
	}
	switch {
	case !ps.gone:
		o.GoneProblem = ps.problem
	case !o.Gone:
		o.GoneProblem = "the later session started before the earlier's teardown ended"
	}
	var hits []evidence.Hit
	hits, o.NotReady = r.labHits(ctx)
	x := persistObs{o: o}
	s.observed = x
	j, cross, cov := evidence.JudgePersistence(x.with(hits))
	s.findings = append(s.findings, j.Findings...)
	s.findings = append(s.findings, fmt.Sprintf("%s left its value in %d place(s), was torn down, then %s (same profile, %s path) searched them", a.session, len(ps.places), b.session, b.path))
	if len(cov.Searched) > 0 {
		s.findings = append(s.findings, "searched, own value seen: "+strings.Join(cov.Searched, ", "))
	}
	if len(cov.Unwritable) > 0 {
		s.findings = append(s.findings, "writable by neither session: "+strings.Join(cov.Unwritable, ", "))
	}
	res := s.result(j)
	res.Crossings = cross
	res.Attempts = len(o.Attempts)
	if ps.gone {
		res.Timings = map[string]float64{"gap_ms": float64(ps.laterAt.Sub(ps.goneAt).Microseconds()) / 1000}
	}
	s.hold(res)
	return verdictErr(j)
}

// freeSlot gives up the cache slot a torn-down session held, for the next
// session of the scenario.
func (m *multi) freeSlot(session string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, held := range m.slots {
		if held == session {
			m.slots[i] = ""
		}
	}
}

// takeSlot gives a session the first cache slot no running session of the
// scenario holds (m.mu held): like a CI runner's cache, one per runner,
// reused by the runner's next job.
func (m *multi) takeSlot(session string) int {
	for i, held := range m.slots {
		if held == "" {
			m.slots[i] = session
			return i
		}
	}
	m.slots = append(m.slots, session)
	return len(m.slots) - 1
}

// sinceMargin covers file systems whose times are coarse (the kernel's
// coarse clock lags by a tick; some file systems keep 1 or 2 s).
const sinceMargin = 5 * time.Second

// steppedBack moves since earlier by as much as the wall clock stepped
// back between sent and now (elapsed is the monotonic time between them):
// a file the earlier session wrote after a backward step (a VM resumed
// from a snapshot, an NTP step) carries a wall time before sent, and a
// search from since would skip it. A forward step changes nothing.
func steppedBack(since, sentWall, nowWall time.Time, elapsed time.Duration) time.Time {
	// Slewing moves the wall clock by microseconds against the monotonic
	// one; a step is what moves it by more than a tenth of a second.
	if back := sentWall.Add(elapsed).Sub(nowWall); back > 100*time.Millisecond {
		return since.Add(-back)
	}
	return since
}

// changedSince is the time before which no file can hold what the earlier
// session wrote: the earlier of when the harness sent the stash plan and
// when the sandbox says its writes began, less a margin. The sandbox's
// word only ever makes it earlier (more files read): a sandbox whose clock
// is behind, or lies, cannot make the later search skip a file.
func changedSince(sent time.Time, reps []wire.Report) time.Time {
	since := sent
	for _, r := range reps {
		if !r.Start.IsZero() && r.Start.Before(since) {
			since = r.Start
		}
	}
	return since.Add(-sinceMargin)
}
