package steps

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/cucumber/godog"

	"github.com/gatehouse-dev/gatehouse/internal/ledger"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// exchangeFor is how long each side of cross-session sends and listens at
// most. The overlap rule needs each receive to share
// evidence.DefaultMinCommon with the other side's send, so the sessions'
// probes may start up to 7.5 s apart and still count: on a busy runner a
// gVisor exec alone took near 3 s, and the first side's windows ran out
// before the other's began. Where both sides say when they started, the
// exchange ends exchangeHold after the last start (exchange_end.go), so
// the length costs only the sides that never say.
const exchangeFor = 8 * time.Second

// way is what a channel's targets are made from: the other session's
// network, the scenario's IPC key, and which side (0 or 1) this is.
type way struct {
	peer     targets.Network
	key      int
	me, them int
}

// channelWay gives the send and receive targets of one channel.
type channelWay func(w way) (send, receive string)

func fixed(t string) channelWay {
	return func(way) (string, string) { return t, t }
}

func toPeer(scheme string, v6 bool, port int) channelWay {
	return func(w way) (string, string) {
		addr := w.peer.IPv4
		if v6 {
			addr = w.peer.IPv6
		}
		p := strconv.Itoa(port)
		return scheme + ":" + net.JoinHostPort(addr, p), scheme + ":" + net.JoinHostPort("", p)
	}
}

// mqName is side's POSIX message queue in a scenario: each side reads its
// own and writes to the other's.
func mqName(key, side int) string { return fmt.Sprintf("/gatehouse-xs-%x-%d", key, side) }

// channels are what cross-session tables may name.
var channels = map[string]channelWay{
	"tcp":           toPeer("tcp", false, 7411),
	"udp":           toPeer("udp", false, 7412),
	"tcp-ipv6":      toPeer("tcp", true, 7413),
	"udp-ipv6":      toPeer("udp", true, 7414),
	"udp-broadcast": fixed("udp:255.255.255.255:7415"),
	"tmp-file":      fixed("dir:/tmp"),
	"dev-shm-file":  fixed("dir:/dev/shm"),
	"var-tmp-file":  fixed("dir:/var/tmp"),
	"home-file":     fixed("dir:$HOME"),
	"run-user-file": fixed("dir:/run/user/$UID"),
	// The folder above the session's storage, where it really is: a
	// platform that puts every session's workspace side by side.
	"workspace-parent-file": fixed("dir:" + OwnStorage + "/.."),
	// Every writable mount point in the sandbox's own mount table: a
	// shared folder bound anywhere at all.
	"writable-mounts": fixed("dir:@writable"),
	"cache-folder":    fixed("dir:/var/cache/agent"),
	"unix-socket":     fixed("unix:/tmp"),
	"abstract-socket": fixed("abstract:gatehouse-xs"),
	"sysv-shm": func(w way) (string, string) {
		t := "shm:0x" + strconv.FormatInt(int64(w.key), 16)
		return t, t
	},
	"posix-mqueue": func(w way) (string, string) {
		return "mq:" + mqName(w.key, w.them), "mq:" + mqName(w.key, w.me)
	},
	// The other session's processes (its holder carries its value in argv
	// and environment) where a pid namespace is shared.
	"proc-environ": fixed("proc:environ"),
	"proc-cmdline": fixed("proc:cmdline"),
}

func registerExchange(sc *godog.ScenarioContext, r *runner) {
	sc.Step(`^both sessions, at the same time, offer their value to each other and listen over these channels:$`, r.exchange)
	sc.Step(`^no value crossed between the sessions$`, r.judgeCrossing)
}

func (r *runner) exchange(ctx context.Context, table *godog.Table) error {
	ps, m, err := partiesOf(ctx)
	if err != nil {
		return err
	}
	names, err := column(table, "channel")
	if err != nil {
		return err
	}
	m.mu.Lock()
	if m.shmKey == 0 {
		// Random per scenario, so concurrent scenarios never meet here.
		m.shmKey = 0x67000000 | rand.IntN(1<<24)
		// A leaky session may make them in the host's IPC namespace.
		rel, _ := ledger.Record(ledger.Entry{Kind: ledger.SysvShm, What: fmt.Sprintf("%#x", m.shmKey)})
		m.releases = append(m.releases, rel)
		for side := range 2 {
			rel, _ := ledger.Record(ledger.Entry{Kind: ledger.Mqueue, What: mqName(m.shmKey, side)})
			m.releases = append(m.releases, rel)
		}
	}
	key := m.shmKey
	nets := []targets.Network{m.nets[ps[0].s.session], m.nets[ps[1].s.session]}
	m.mu.Unlock()
	plans := make([]wire.Plan, len(ps))
	for i, pt := range ps {
		var steps []wire.Step
		for _, n := range names {
			mk, ok := channels[n]
			if !ok {
				return fmt.Errorf("unknown channel %q", n)
			}
			send, recv := mk(way{peer: nets[1-i], key: key, me: i, them: 1 - i})
			d := int(exchangeFor / time.Millisecond)
			steps = append(steps,
				wire.Step{ID: "send-" + n, Kind: wire.KindSend, Target: send, Payload: pt.s.canary, DurationMS: d},
				wire.Step{ID: "receive-" + n, Kind: wire.KindReceive, Target: recv, Payload: pt.s.canary, DurationMS: d})
		}
		plans[i] = wire.Plan{TimeoutMS: int((exchangeFor + 2*time.Second) / time.Millisecond), Steps: steps,
			Session: pt.s.session, Control: true}
	}
	// Each session's holder lives while the other listens and offers.
	release := r.holdAll(ctx, ps)
	xc := newExchangeCoord()
	for i, pt := range ps {
		xc.expect(pt.s.session, plans[i])
	}
	xctx, stop := context.WithCancel(ctx)
	var ended sync.WaitGroup
	ended.Go(func() { xc.run(xctx, exchangeFor) })
	err = r.runAll(withExchange(ctx, xc), ps, "exchange", plans, 30*time.Second)
	stop()
	ended.Wait()
	release()
	return err
}

func (r *runner) judgeCrossing(ctx context.Context) error {
	return r.judgeExchange(ctx, false)
}
