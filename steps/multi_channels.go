package steps

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"time"

	"github.com/cucumber/godog"

	"gatehouse/ledger"
	"gatehouse/probe"
	"gatehouse/targets"
)

// exchangeFor is how long each side of cross-session sends and listens.
// Both sides start within a few tens of milliseconds of each other and
// send every 100 ms, so this leaves a wide common window.
const exchangeFor = 2 * time.Second

// channelWay gives the send and receive targets of one channel for a
// session whose peer has the network peer; key is the scenario's SysV key.
type channelWay func(peer targets.Network, key int) (send, receive string)

func fixed(t string) channelWay {
	return func(targets.Network, int) (string, string) { return t, t }
}

func toPeer(scheme string, v6 bool, port int) channelWay {
	return func(peer targets.Network, _ int) (string, string) {
		addr := peer.IPv4
		if v6 {
			addr = peer.IPv6
		}
		p := strconv.Itoa(port)
		return scheme + ":" + net.JoinHostPort(addr, p), scheme + ":" + net.JoinHostPort("", p)
	}
}

// channels are what cross-session tables may name.
var channels = map[string]channelWay{
	"tcp":             toPeer("tcp", false, 7411),
	"udp":             toPeer("udp", false, 7412),
	"tcp-ipv6":        toPeer("tcp", true, 7413),
	"udp-ipv6":        toPeer("udp", true, 7414),
	"udp-broadcast":   fixed("udp:255.255.255.255:7415"),
	"tmp-file":        fixed("dir:/tmp"),
	"dev-shm-file":    fixed("dir:/dev/shm"),
	"cache-folder":    fixed("dir:/var/cache/agent"),
	"unix-socket":     fixed("unix:/tmp"),
	"abstract-socket": fixed("abstract:gatehouse-xs"),
	"sysv-shm": func(_ targets.Network, key int) (string, string) {
		t := "shm:0x" + strconv.FormatInt(int64(key), 16)
		return t, t
	},
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
		// A leaky session may make it in the host's IPC namespace.
		rel, _ := ledger.Record(ledger.Entry{Kind: ledger.SysvShm, What: fmt.Sprintf("%#x", m.shmKey)})
		m.releases = append(m.releases, rel)
	}
	key := m.shmKey
	nets := []targets.Network{m.nets[ps[0].s.session], m.nets[ps[1].s.session]}
	m.mu.Unlock()
	plans := make([]probe.Plan, len(ps))
	for i, pt := range ps {
		var steps []probe.Step
		for _, n := range names {
			way, ok := channels[n]
			if !ok {
				return fmt.Errorf("unknown channel %q", n)
			}
			send, recv := way(nets[1-i], key)
			d := int(exchangeFor / time.Millisecond)
			steps = append(steps,
				probe.Step{ID: "send-" + n, Kind: probe.KindSend, Target: send, Payload: pt.s.canary, DurationMS: d},
				probe.Step{ID: "receive-" + n, Kind: probe.KindReceive, Target: recv, Payload: pt.s.canary, DurationMS: d})
		}
		plans[i] = probe.Plan{TimeoutMS: int((exchangeFor + 2*time.Second) / time.Millisecond), Steps: steps}
	}
	return r.runAll(ctx, ps, "exchange", plans, 30*time.Second)
}

func (r *runner) judgeCrossing(ctx context.Context) error {
	return r.judgeExchange(ctx, false, true)
}
