package steps

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/cucumber/godog"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// OwnStorage is where a profile binds a session's own storage
// ({{place:storage}}) inside the sandbox; the positive control of
// foreign-storage reads its nonce there.
const OwnStorage = "/workspace"

// storageWay builds one search attempt; ownHost and peerHost are the host
// folders of the searching session's storage and the other's.
type storageWay func(peerHost, rootHost string) wire.Step

func find(target string) wire.Step { return wire.Step{Kind: wire.KindFind, Target: target} }

// storageWays are the attempts foreign-storage tables may name.
var storageWays = map[string]storageWay{
	"host-path": func(peer, _ string) wire.Step {
		return wire.Step{Kind: wire.KindRead, Target: filepath.Join(peer, "nonce")}
	},
	"host-parent": func(_, root string) wire.Step { return find(root) },
	// Every mount point, and the other session's storage (and the folder
	// of every session's) under each, where a bind of a host folder above
	// them would show them.
	"mount-points": func(peer, root string) wire.Step {
		return wire.Step{Kind: wire.KindFind, Target: "@mounts", Hints: []string{peer, root}}
	},
	"data":      func(_, _ string) wire.Step { return find("/data") },
	"mnt":       func(_, _ string) wire.Step { return find("/mnt") },
	"storage":   func(_, _ string) wire.Step { return find("/storage") },
	"workspace": func(_, _ string) wire.Step { return find(OwnStorage) },
	"workspace-parent": func(_, _ string) wire.Step {
		return find(filepath.Dir(OwnStorage) + "*")
	},
	"srv":        func(_, _ string) wire.Step { return find("/srv") },
	"var-lib":    func(_, _ string) wire.Step { return find("/var/lib") },
	"home":       func(_, _ string) wire.Step { return find("/home") },
	"tmp":        func(_, _ string) wire.Step { return find("/tmp") },
	"proc-roots": func(_, _ string) wire.Step { return find("/proc/[0-9]*/root" + OwnStorage) },
	"proc-cwds":  func(_, _ string) wire.Step { return find("/proc/[0-9]*/cwd") },
}

func registerStorage(sc *godog.ScenarioContext, r *runner) {
	sc.Step(`^another sandbox session on the same path$`, r.anotherSession)
	sc.Step(`^each session tries these ways to reach the other session's storage:$`, r.searchStorage)
	sc.Step(`^each session calls the allowed inference endpoint$`, r.eachControl)
	sc.Step(`^neither session's storage nonce reached the other session$`, r.judgeStorage)
}

func (r *runner) anotherSession(ctx context.Context) error {
	s, m := current(ctx), multiOf(ctx)
	if s == nil || m == nil {
		return errors.New("no scenario state")
	}
	p, err := r.startPeer(ctx)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.parties = []*party{{s: s}, {s: p}}
	m.mu.Unlock()
	return nil
}

func partiesOf(ctx context.Context) ([]*party, *multi, error) {
	m := multiOf(ctx)
	if m == nil || len(m.parties) < 2 {
		return nil, nil, errors.New("two sessions needed: 'another sandbox session on the same path' must come first")
	}
	return m.parties, m, nil
}

func (r *runner) searchStorage(ctx context.Context, table *godog.Table) error {
	ps, m, err := partiesOf(ctx)
	if err != nil {
		return err
	}
	names, err := column(table, "attempt")
	if err != nil {
		return err
	}
	plans := make([]wire.Plan, len(ps))
	for i, pt := range ps {
		peer := ps[1-i].s.session
		m.mu.Lock()
		root := m.root
		m.mu.Unlock()
		steps := []wire.Step{{ID: "own-storage", Kind: wire.KindRead, Target: OwnStorage + "/nonce"}}
		for _, n := range names {
			mk, ok := storageWays[n]
			if !ok {
				return fmt.Errorf("unknown attempt %q to reach another session's storage", n)
			}
			st := mk(filepath.Join(root, "storage", peer), filepath.Join(root, "storage"))
			st.ID = n
			steps = append(steps, st)
		}
		plans[i] = wire.Plan{TimeoutMS: 4000, Parallel: 4, Steps: steps}
		pt.s.planned = append(pt.s.planned, names...)
	}
	// The other session's processes (their /proc/PID/cwd and root lead to
	// its storage) are alive the whole time each session searches.
	release := r.holdAll(ctx, ps)
	err = r.runAll(ctx, ps, "storage-search", plans, 30*time.Second)
	release()
	return err
}

func (r *runner) eachControl(ctx context.Context) error {
	ps, _, err := partiesOf(ctx)
	if err != nil {
		return err
	}
	plans := make([]wire.Plan, len(ps))
	for i, pt := range ps {
		plans[i] = wire.Plan{TimeoutMS: int(attemptTimeout / time.Millisecond), Steps: []wire.Step{controlStep(pt.s.control)}}
	}
	// The control's IDs are not attempts of the gate.
	err = r.runAll(ctx, ps, "positive-control", plans, 30*time.Second)
	for _, pt := range ps {
		pt.planned = without(pt.planned, "positive-control")
	}
	return err
}

func without(ids []string, drop string) []string {
	var out []string
	for _, id := range ids {
		if id != drop {
			out = append(out, id)
		}
	}
	return out
}

func (r *runner) judgeStorage(ctx context.Context) error {
	return r.judgeExchange(ctx, true)
}

// judgeExchange judges a two-session gate and records its result. Both
// gates require the sessions to have really run at the same time.
func (r *runner) judgeExchange(ctx context.Context, ownValue bool) error {
	s := current(ctx)
	ps, m, err := partiesOf(ctx)
	if err != nil || s == nil {
		return errors.Join(err, errors.New("no scenario state"))
	}
	if err := r.settle(ctx); err != nil {
		return err
	}
	o := evidence.ExchangeObservation{
		Sightings: sightings(ps), Allowed: allowedEndpoints, OwnValue: ownValue,
		Overlap: true, Timing: evidence.Timing{Live: map[string]evidence.Window{}},
	}
	for _, pt := range ps {
		o.Timing.Activities = append(o.Timing.Activities, pt.acts...)
		o.Timing.Live[pt.s.session] = pt.live
	}
	m.mu.Lock()
	for _, pt := range ps {
		v := pt.s.canary
		if ownValue {
			v = m.nonces[pt.s.session]
		}
		o.Parties = append(o.Parties, evidence.Party{Session: pt.s.session, Value: v, Control: pt.s.control, Planned: pt.planned})
		o.Attempts = append(o.Attempts, pt.s.attempts...)
	}
	m.mu.Unlock()
	var hits []evidence.Hit
	hits, o.NotReady = r.labHits(ctx)
	x := exchangeObs{o: o}
	s.observed = x
	j, cross := evidence.JudgeExchange(x.with(hits))
	res := s.result(j)
	res.Crossings = cross
	res.Attempts = len(o.Attempts)
	if ov := evidence.CheckOverlap(o.Parties, o.Timing); ov.Pairs > 0 {
		// The least time a send and the other session's receive shared.
		res.Timings = map[string]float64{"overlap_min_ms": float64(ov.Shortest.Microseconds()) / 1000}
	}
	s.hold(res)
	return verdictErr(j)
}

// settle waits for endpoints to record what already arrived.
