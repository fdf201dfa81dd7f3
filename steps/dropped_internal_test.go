package steps

import (
	"context"
	"net/netip"
	"testing"

	"github.com/gatehouse-dev/gatehouse/lab"
	"github.com/gatehouse-dev/gatehouse/probe"
)

// flowsLab plays the lab's flow records: before is the reading when the
// run starts, after every later one; holds is what could hold a packet.
type flowsLab struct {
	reads         int
	before, after lab.FlowEvidence
	holds         []string
}

func (l *flowsLab) Flows(context.Context, string) (lab.FlowEvidence, error) {
	l.reads++
	if l.reads == 1 {
		return l.before, nil
	}
	return l.after, nil
}

func (l *flowsLab) Holds(context.Context, string) ([]string, error) { return l.holds, nil }

func emitted(counts map[lab.Flow]uint64, arrived ...lab.Flow) lab.FlowEvidence {
	ev := lab.FlowEvidence{Emitted: counts, Arrived: map[lab.Flow]bool{}}
	for _, f := range arrived {
		ev.Arrived[f] = true
	}
	return ev
}

// A timeout is proven a drop only by the kernel's records, counted where
// counting is exact; the probe's own word ("settled by the harness" in its
// Error) proves nothing.
func TestDropProof(t *testing.T) {
	resolver := netip.MustParseAddr(lab.ResolverV4)
	dnsFlow := flow("udp", lab.ResolverV4, 53)
	cb80 := flow("tcp", lab.CallbackV4, 80)
	dnsA := probe.Step{ID: "a", Kind: probe.KindDNS, Target: "x.oob.gatehouse.test"}
	dnsT := probe.Step{ID: "t", Kind: probe.KindDNS, Target: "y.oob.gatehouse.test", QType: "TXT"}
	http := probe.Step{ID: "h", Kind: probe.KindHTTP, Target: "http://" + lab.CallbackV4 + "/c"}
	http2 := probe.Step{ID: "h2", Kind: probe.KindHTTP, Target: "http://" + lab.CallbackV4 + "/d"}
	proxy := probe.Step{ID: "p", Kind: probe.KindProxy, Target: "rebind.inference.lab.gatehouse.test:80"}
	timedOut := func(ids ...string) []probe.Report {
		var out []probe.Report
		for _, id := range ids {
			out = append(out, probe.Report{ID: id, Outcome: probe.OutcomeTimeout})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		steps   []probe.Step
		after   lab.FlowEvidence
		holds   []string
		reps    []probe.Report
		settled map[string]bool
		want    []string // IDs proven dropped
	}{
		{"two lookups, two packets counted, none arrived", []probe.Step{dnsA, dnsT}, emitted(map[lab.Flow]uint64{dnsFlow: 2}), nil, timedOut("a", "t"), nil, []string{"a", "t"}},
		{"two lookups, one packet counted: a starved one may never have sent", []probe.Step{dnsA, dnsT}, emitted(map[lab.Flow]uint64{dnsFlow: 1}), nil, timedOut("a", "t"), nil, nil},
		{"the flow reached the lab: the records decide, not a drop", []probe.Step{dnsA}, emitted(map[lab.Flow]uint64{dnsFlow: 1}, dnsFlow), nil, timedOut("a"), nil, nil},
		{"something on the way could hold a packet", []probe.Step{dnsA}, emitted(map[lab.Flow]uint64{dnsFlow: 1}), []string{"a netfilter userspace queue"}, timedOut("a"), nil, nil},
		{"one connect alone on its flow, its SYN counted", []probe.Step{http}, emitted(map[lab.Flow]uint64{cb80: 2}), nil, timedOut("h"), nil, []string{"h"}},
		{"two connects share a flow: resends hide a starved one", []probe.Step{http, http2}, emitted(map[lab.Flow]uint64{cb80: 2}), nil, timedOut("h", "h2"), nil, nil},
		{"nothing counted", []probe.Step{http}, emitted(map[lab.Flow]uint64{}), nil, timedOut("h"), nil, nil},
		{"through a proxy: no flow to read", []probe.Step{proxy}, emitted(map[lab.Flow]uint64{cb80: 1}), nil, timedOut("p"), nil, nil},
		{"the probe says settled, the harness did not", []probe.Step{proxy}, emitted(nil), nil,
			[]probe.Report{{ID: "p", Outcome: probe.OutcomeTimeout, Error: probe.SettledPrefix + ": the kernel counted its packets leave"}}, nil, nil},
		{"the harness settled it", []probe.Step{proxy}, emitted(nil), nil, timedOut("p"), map[string]bool{"p": true}, []string{"p"}},
		{"an answer needs no proof", []probe.Step{http}, emitted(map[lab.Flow]uint64{cb80: 1}), nil, []probe.Report{{ID: "h", Outcome: probe.OutcomeRefused}}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := &flowsLab{before: emitted(map[lab.Flow]uint64{}), after: tc.after, holds: tc.holds}
			d := newDropProof(context.Background(), fl, "s1", resolver, probe.Plan{Steps: tc.steps})
			got := d.prove(context.Background(), tc.reps, tc.settled)
			if len(got) != len(tc.want) {
				t.Fatalf("proven %v, want %v", got, tc.want)
			}
			for _, id := range tc.want {
				if got[id] == "" {
					t.Errorf("%s: no proof, want one (proven %v)", id, got)
				}
			}
		})
	}
}
