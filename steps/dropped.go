package steps

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/gatehouse-dev/gatehouse/lab"
	"github.com/gatehouse-dev/gatehouse/probe"
)

// A timed-out attempt supports a PASS only with the kernel's proof that its
// packets were dropped (evidence.Answered): the harness settled it on that
// proof while it ran (settle.go), or, read once the run is over, the flow
// it was stuck on left the sandbox's sender as often as the plan opens it
// and nothing of it reached the lab, with nothing on the way that could
// hold a packet. Counting is exact only where each step sends one packet
// (dns, udp, icmp) or one step alone opens the flow (a TCP connect
// resends its SYN): elsewhere a starved step that never sent could hide
// behind another's resends, so there is no proof and the attempt is tried
// again (retry.go).

// dropProof is the flow evidence around one probe run.
type dropProof struct {
	fl      flowLab
	session string
	flows   map[string][]lab.Flow // by step ID, only the knowable ones
	perFlow map[lab.Flow]int      // steps of the plan opening each flow
	oneShot map[lab.Flow]bool     // every step opening it sends one packet
	before  map[lab.Flow]uint64
}

// dropProofFor reads the flow evidence before a run in s; nil when the lab
// has none for it.
func (r *runner) dropProofFor(ctx context.Context, s *scenario, p probe.Plan) *dropProof {
	fl, ok := r.cfg.Lab.(flowLab)
	if !ok || !s.attached {
		return nil
	}
	return newDropProof(ctx, fl, s.session, labResolver(r.cfg.Resolver, r.labAddrs()), p)
}

// newDropProof reads the flow evidence before a run; nil when there is
// none or no step's flows are knowable.
func newDropProof(ctx context.Context, fl flowLab, session string, resolver netip.Addr, p probe.Plan) *dropProof {
	d := &dropProof{fl: fl, session: session, flows: map[string][]lab.Flow{}, perFlow: map[lab.Flow]int{}, oneShot: map[lab.Flow]bool{}}
	for _, st := range p.Steps {
		fs := proofFlows(st, resolver)
		if fs == nil {
			continue
		}
		d.flows[st.ID] = fs
		for _, f := range fs {
			if d.perFlow[f] == 0 {
				d.oneShot[f] = true
			}
			d.perFlow[f]++
			d.oneShot[f] = d.oneShot[f] && oneShotKind(st.Kind)
		}
	}
	if len(d.flows) == 0 {
		return nil
	}
	ev, err := fl.Flows(ctx, session)
	if err != nil {
		return nil
	}
	d.before = ev.Emitted
	return d
}

// oneShotKind: the probe sends exactly one packet for the step's flow
// (doDNS, doUDP, doICMP), so packets counted are steps that sent.
func oneShotKind(kind string) bool {
	return kind == probe.KindDNS || kind == probe.KindUDP || kind == probe.KindICMP
}

// proofFlows are the flows a step opens, as stepFlows knows them, and a
// DNS query's to its server: the step's own, or the sandbox's resolver
// when it is one of the lab's addresses.
func proofFlows(st probe.Step, resolver netip.Addr) []lab.Flow {
	if st.Kind != probe.KindDNS {
		return stepFlows(st)
	}
	if st.Server == "" {
		if !resolver.IsValid() {
			return nil
		}
		return []lab.Flow{{Addr: resolver, Proto: "udp", Port: 53}}
	}
	ap, err := netip.ParseAddrPort(st.Server)
	if err != nil {
		a, err := netip.ParseAddr(st.Server)
		if err != nil {
			return nil
		}
		ap = netip.AddrPortFrom(a, 53)
	}
	return []lab.Flow{{Addr: ap.Addr().Unmap(), Proto: "udp", Port: ap.Port()}}
}

// labResolver is the lab resolver the sandbox is given, or no address
// when it is not one the lab serves (a loopback stub: its packets never
// go toward the lab, so their arrival proves nothing).
func labResolver(resolver string, addrs lab.Addrs) netip.Addr {
	if resolverDest(resolver, addrs) == "" || resolverDest(resolver, addrs) == lab.LoopbackResolverDest {
		return netip.Addr{}
	}
	if resolver == "" {
		resolver = lab.ResolverV4
	}
	a, _ := netip.ParseAddr(resolver)
	return a.Unmap()
}

// prove returns, for each timed-out report the kernel shows dropped, what
// shows it. settled are the attempts the settle watch ended on its own
// reading of the same evidence. Each reading is made twice, settleInFlight
// apart, so a packet on the wire when the run ended is not missed.
func (d *dropProof) prove(ctx context.Context, reps []probe.Report, settled map[string]bool) map[string]string {
	out := map[string]string{}
	var pending []probe.Report
	for _, rep := range reps {
		switch {
		case rep.Outcome != probe.OutcomeTimeout:
		case settled[rep.ID]:
			out[rep.ID] = "settled by the harness: the kernel counted its packets leave the sandbox's sender and nothing of them reach the lab"
		default:
			pending = append(pending, rep)
		}
	}
	if d == nil || len(pending) == 0 {
		return out
	}
	first, err := d.read(ctx)
	if err != nil {
		return out
	}
	select {
	case <-ctx.Done():
		return out
	case <-time.After(settleInFlight):
	}
	again, err := d.read(ctx)
	if err != nil {
		return out
	}
	for _, rep := range pending {
		fs, ok := d.flows[rep.ID]
		if !ok {
			continue
		}
		why, ok1 := d.dropped(fs, first)
		_, ok2 := d.dropped(fs, again)
		if ok1 && ok2 {
			out[rep.ID] = why
		}
	}
	return out
}

// read is one reading of the flow evidence, refused when anything on the
// way could hold a packet.
func (d *dropProof) read(ctx context.Context) (lab.FlowEvidence, error) {
	if holds, err := d.fl.Holds(ctx, d.session); err != nil || len(holds) > 0 {
		return lab.FlowEvidence{}, fmt.Errorf("a packet may be held: %v %v", holds, err)
	}
	return d.fl.Flows(ctx, d.session)
}

// dropped says whether ev shows the flow an attempt was stuck on (its
// first flow that nothing reached the lab of) dropped, and how.
func (d *dropProof) dropped(fs []lab.Flow, ev lab.FlowEvidence) (string, bool) {
	var f lab.Flow
	found := false
	for _, x := range fs {
		if !ev.Arrived[x] {
			f, found = x, true
			break
		}
	}
	if !found {
		return "", false // everything arrived: the lab's records decide
	}
	sent := ev.Emitted[f] - min(d.before[f], ev.Emitted[f])
	planned := d.perFlow[f]
	switch {
	case d.oneShot[f] && sent >= uint64(planned):
	case !d.oneShot[f] && planned == 1 && sent >= 1:
	default:
		return "", false
	}
	return fmt.Sprintf("the kernel counted %d packet(s) of %s leave the sandbox's sender for the %d attempt(s) opening it, none reached the lab, and nothing on the way could hold one", sent, f, planned), true
}
