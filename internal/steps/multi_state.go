package steps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cucumber/godog"
	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/posixmq"
	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
	"github.com/gatehouse-dev/gatehouse/targets"
)

type multiKey struct{}

// multi is the extra per-scenario state of the session gates
// (foreign-storage, cross-session, stop-signal): the Gatehouse-owned folders
// behind the profile's {{place:...}} references, further sessions the
// scenario started, and what their probes reported.
type multi struct {
	mu      sync.Mutex
	root    string                    // this scenario's places; removed afterwards
	dir     *untrusted.Dir            // root, opened with no link followed
	ids     map[string]targets.FileID // storage-root and shared, as made
	slotIDs map[int]targets.FileID    // each cache slot, as made
	// made, in tests, acts as a hostile session would between a
	// session's storage being made and its taking its place.
	made     func(session string)
	nets     map[string]targets.Network // by session
	nonces   map[string]string          // storage nonce by session
	peers    []*scenario                // sessions beyond the scenario's own
	shmKey   int                        // SysV key the cross-session channels use; 0 = none
	parties  []*party                   // the sessions of a two-session gate, in order
	stops    []time.Time                // stop-signal: when each run's stop was sent
	runs     []evidence.StopRun         // stop-signal: what was seen from outside
	stopTags []string                   // stop-signal: each run's session tag, to re-read its heartbeats
	limit    time.Duration              // stop-signal: the profile's limit
	slots    []string                   // cache slots: the session holding each, "" when free
	// releases drop this scenario's ledger entries (places, SysV key)
	// once what they name is gone.
	releases []func()
	// rootRelease drops the places folder's entry once it is removed.
	rootRelease func()
}

func multiOf(ctx context.Context) *multi {
	m, _ := ctx.Value(multiKey{}).(*multi)
	return m
}

// registerSessions adds the steps and hooks of the session gates.
func registerSessions(sc *godog.ScenarioContext, r *runner) {
	sc.Before(func(ctx context.Context, _ *godog.Scenario) (context.Context, error) {
		return context.WithValue(ctx, multiKey{}, &multi{nets: map[string]targets.Network{}, nonces: map[string]string{}}), nil
	})
	sc.After(r.afterSessions)
	registerStorage(sc, r)
	registerExchange(sc, r)
	registerStop(sc, r)
	registerPersist(sc, r)
}

// reaper is the optional ability of a session to end everything it left,
// whatever its profile's stop does: the harness's own teardown.
type reaper interface {
	Reap(ctx context.Context) error
}

// afterSessions runs after the runner's own teardown of the scenario's
// session: it reaps that session, tears down the peers, and removes the
// places and any SysV segment or message queue a leaky session left in
// the host's IPC namespace, so that nothing outlives the scenario.
func (r *runner) afterSessions(ctx context.Context, _ *godog.Scenario, _ error) (context.Context, error) {
	m := multiOf(ctx)
	s := current(ctx)
	if m == nil {
		return ctx, nil
	}
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if s == nil {
		s = &scenario{} // still tear the peers down; nothing to record on
	}
	reap(tctx, s)
	checkGone(tctx, s)
	m.mu.Lock()
	peers := append([]*scenario(nil), m.peers...)
	m.mu.Unlock()
	for _, p := range peers {
		reap(tctx, p)
		r.teardown(tctx, p)
		checkGone(tctx, p)
		s.findings = append(s.findings, p.findings...)
		s.leftover = append(s.leftover, p.leftover...)
	}
	if m.shmKey != 0 {
		if id, err := unix.SysvShmGet(m.shmKey, 0, 0); err == nil {
			if _, err := unix.SysvShmCtl(id, unix.IPC_RMID, nil); err != nil {
				s.teardownProblem(fmt.Sprintf("removing the SysV segment with key %#x: %v", m.shmKey, err), true)
			}
		}
		for side := range 2 {
			if err := posixmq.Unlink(mqName(m.shmKey, side)); err != nil && !errors.Is(err, unix.ENOSYS) {
				s.teardownProblem(fmt.Sprintf("removing the message queue %s: %v", mqName(m.shmKey, side), err), true)
			}
		}
	}
	if m.dir != nil {
		m.dir.Close()
	}
	if m.root != "" {
		if err := os.RemoveAll(m.root); err != nil {
			s.teardownProblem("removing the scenario's places: "+err.Error(), true)
		} else if m.rootRelease != nil {
			m.rootRelease()
		}
	}
	if len(s.leftover) == 0 {
		for _, rel := range m.releases {
			rel()
		}
	}
	return ctx, nil
}

// reap runs the harness's own teardown of a session. Its error is a
// finding; whether something was left is for checkGone to say, since a
// failed stop before a successful reap also shows up here.
func reap(ctx context.Context, s *scenario) {
	if rp, ok := s.sess.(reaper); ok && s.sess != nil {
		if err := rp.Reap(ctx); err != nil {
			// Left behind unless the target can list what is left.
			left := true
			if l, ok := s.sess.(targets.ProcessLister); ok {
				_, lerr := l.Processes(ctx)
				left = lerr != nil
			}
			s.teardownProblem(s.session+": reap failed: "+err.Error(), left)
		}
	}
}

// checkGone asks the target, after the reap, whether any process of the
// session is still running (bwrap: anything left in its cgroup).
func checkGone(ctx context.Context, s *scenario) {
	l, ok := s.sess.(targets.ProcessLister)
	if !ok || s.sess == nil {
		return
	}
	pids, err := l.Processes(ctx)
	switch {
	case errors.Is(err, targets.ErrUnsupported):
	case err != nil:
		s.teardownProblem(s.session+": could not list its processes after the reap: "+err.Error(), true)
	case len(pids) > 0:
		s.teardownProblem(fmt.Sprintf("%s: %d process(es) still running after the reap: %v", s.session, len(pids), pids), true)
	}
}

// addPlaces prepares the host folders a profile may bind, for one session:
//
//	ROOT/storage/SESSION   "storage": the session's own, holding its nonce
//	ROOT/storage           "storage-root": every session's storage
//	ROOT/shared            "shared": one folder all sessions of the scenario
//	                       share (tmp/, shm/, cache/ inside)
//	ROOT/cache/slot-N      "cache": a cache that outlives its session: the
//	                       first slot no running session holds (takeSlot)
//
// ROOT is a fresh folder per scenario, removed by afterSessions. Every
// folder is made through descriptors with no link followed (places.go),
// and its identity goes into spec.PlaceIDs: the target binds it only if
// it is still the folder made.
func (r *runner) addPlaces(ctx context.Context, s *scenario, spec *targets.Spec) error {
	m := multiOf(ctx)
	if m == nil {
		return errors.New("no session-gate state")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.placesRoot(labName(r.cfg.LabNetns)); err != nil {
		return fmt.Errorf("places: %w", err)
	}
	nonce := token("ghc")
	own, err := m.newStorage(s.session, nonce)
	if err != nil {
		return fmt.Errorf("places: %w", err)
	}
	slot, slotID, err := m.cacheSlot(m.takeSlot(s.session))
	if err != nil {
		return fmt.Errorf("places: %w", err)
	}
	m.nonces[s.session] = nonce
	m.nets[s.session] = spec.Network
	if spec.Places == nil {
		spec.Places = map[string]string{}
	}
	if spec.PlaceIDs == nil {
		spec.PlaceIDs = map[string]targets.FileID{}
	}
	spec.Places["storage"] = filepath.Join(m.root, "storage", s.session)
	spec.Places["storage-root"] = filepath.Join(m.root, "storage")
	spec.Places["shared"] = filepath.Join(m.root, "shared")
	spec.Places["cache"] = slot
	spec.PlaceIDs["storage"] = own
	spec.PlaceIDs["storage-root"] = m.ids["storage-root"]
	spec.PlaceIDs["shared"] = m.ids["shared"]
	spec.PlaceIDs["cache"] = slotID
	return nil
}

// startPeer starts one more session in the scenario, on the same path.
func (r *runner) startPeer(ctx context.Context) (*scenario, error) {
	s, m := current(ctx), multiOf(ctx)
	if s == nil || s.sess == nil || m == nil {
		return nil, errors.New("no session: a 'fresh sandbox session' step must come first")
	}
	// The peer works on the same untrusted content (an agent in it is
	// given the scenario's document too).
	p := &scenario{gate: s.gate, name: s.name, start: time.Now(), corpus: s.corpus}
	m.mu.Lock()
	m.peers = append(m.peers, p)
	m.mu.Unlock()
	if err := r.freshSession(context.WithValue(ctx, stateKey{}, p), string(s.path)); err != nil {
		return nil, fmt.Errorf("start another session: %w", err)
	}
	return p, nil
}
