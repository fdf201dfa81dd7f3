package steps

import (
	"context"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// Ending an exchange early. The two-session gates (cross-session) hold
// each channel open on both sides for exchangeFor, long enough for probes
// that start seconds apart. Where both start together, that is mostly
// waiting: once every send and receive of both sessions has said it
// started ("@active ID" on the probe's stderr), the exchange runs on for
// exchangeHold and the harness then ends them all ("end ID", which a
// probe takes as the end of their duration). The overlap rule still
// judges the windows the reports give (evidence.DefaultMinCommon per
// pair): ending early never makes a thin overlap count, it only stops
// waiting once the overlap is there. Where a side never says it started
// (an agent's run, a target that buffers stdin), every step runs its
// whole duration as before.

// exchangeHold is how long every send and receive keeps going after the
// last of them started: twice the overlap the rule asks of each pair.
const exchangeHold = 1000 * time.Millisecond

type exchangeKey struct{}

// exchangeCoord follows the parties of one exchange.
type exchangeCoord struct {
	mu      sync.Mutex
	want    map[string]map[string]bool // session -> send/receive IDs -> started
	ctls    map[string]*control
	all     chan struct{} // closed once every one started
	allOnce sync.Once
}

func newExchangeCoord() *exchangeCoord {
	return &exchangeCoord{want: map[string]map[string]bool{}, ctls: map[string]*control{}, all: make(chan struct{})}
}

// expect registers a party's plan before any party runs.
func (x *exchangeCoord) expect(session string, p wire.Plan) {
	x.mu.Lock()
	defer x.mu.Unlock()
	ids := map[string]bool{}
	for _, st := range p.Steps {
		if st.Kind == wire.KindSend || st.Kind == wire.KindReceive {
			ids[st.ID] = false
		}
	}
	x.want[session] = ids
}

func withExchange(ctx context.Context, x *exchangeCoord) context.Context {
	return context.WithValue(ctx, exchangeKey{}, x)
}

func exchangeOf(ctx context.Context) *exchangeCoord {
	x, _ := ctx.Value(exchangeKey{}).(*exchangeCoord)
	return x
}

// covers says whether p is one of the exchange's plans.
func (x *exchangeCoord) covers(p wire.Plan) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	_, ok := x.want[p.Session]
	return ok && p.Session != ""
}

// join attaches a party's probe run: its control, and its stderr, from
// which the start lines are read (and still kept).
func (x *exchangeCoord) join(session string, p wire.Plan, ctl *control, stderr io.Writer) io.Writer {
	x.mu.Lock()
	x.ctls[session] = ctl
	x.mu.Unlock()
	return &lineTap{w: stderr, line: func(b []byte) {
		id, ok := strings.CutPrefix(string(b), wire.ActivePrefix)
		if !ok {
			return
		}
		x.started(session, strings.TrimSpace(id))
	}}
}

func (x *exchangeCoord) started(session, id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	ids, ok := x.want[session]
	if !ok {
		return
	}
	if _, ok := ids[id]; !ok {
		return // not a step of its plan: ignored
	}
	ids[id] = true
	for _, ids := range x.want {
		for _, st := range ids {
			if !st {
				return
			}
		}
	}
	x.allOnce.Do(func() { close(x.all) })
}

// run ends the exchange exchangeHold after the last start, unless ctx ends
// or limit passes first (then every step runs its duration).
func (x *exchangeCoord) run(ctx context.Context, limit time.Duration) {
	select {
	case <-x.all:
	case <-ctx.Done():
		return
	case <-time.After(limit):
		// Never all started: end nothing, but close the probes' stdin, so a
		// target that hands a command its stdin only whole still runs it.
		x.mu.Lock()
		for _, ctl := range x.ctls {
			ctl.close()
		}
		x.mu.Unlock()
		return
	}
	select {
	case <-time.After(exchangeHold):
	case <-ctx.Done():
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for session, ids := range x.want {
		ctl := x.ctls[session]
		if ctl == nil {
			continue
		}
		var list []string
		for id := range ids {
			list = append(list, id)
		}
		_ = ctl.send("end " + strings.Join(list, " "))
		ctl.close()
	}
}
