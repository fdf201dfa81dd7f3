package steps

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

func flow(proto, addr string, port uint16) lab.Flow {
	return lab.Flow{Addr: netip.MustParseAddr(addr), Proto: proto, Port: port}
}

func TestStepFlows(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   wire.Step
		want []lab.Flow
	}{
		{"tcp", wire.Step{Kind: wire.KindTCP, Target: "203.0.113.10:9000"}, []lab.Flow{flow("tcp", "203.0.113.10", 9000)}},
		{"tcp v6", wire.Step{Kind: wire.KindTCP, Target: "[2001:db8:cafe::10]:9000"}, []lab.Flow{flow("tcp", "2001:db8:cafe::10", 9000)}},
		{"udp", wire.Step{Kind: wire.KindUDP, Target: "192.88.99.10:443"}, []lab.Flow{flow("udp", "192.88.99.10", 443)}},
		{"icmp", wire.Step{Kind: wire.KindICMP, Target: "3ffe::10"}, []lab.Flow{flow("icmp", "3ffe::10", 0)}},
		{"http", wire.Step{Kind: wire.KindHTTP, Target: "http://203.0.113.10/c/x"}, []lab.Flow{flow("tcp", "203.0.113.10", 80)}},
		{"https port", wire.Step{Kind: wire.KindHTTP, Target: "https://[3ffe::10]:8443/c"}, []lab.Flow{flow("tcp", "3ffe::10", 8443)}},
		{"mapped", wire.Step{Kind: wire.KindHTTP, Target: "http://[::ffff:169.254.169.254]/"}, []lab.Flow{flow("tcp", "169.254.169.254", 80)}},
		{"legacy hex", wire.Step{Kind: wire.KindHTTP, Target: "http://0xa9fea9fe/latest/"}, []lab.Flow{flow("tcp", "169.254.169.254", 80)}},
		{"lab redirect", wire.Step{Kind: wire.KindHTTP, Follow: true, Target: "http://203.0.113.100/redirect?to=http://203.0.113.10/r/x"},
			[]lab.Flow{flow("tcp", "203.0.113.100", 80), flow("tcp", "203.0.113.10", 80)}},
		// Where the next packet goes is someone else's word, or needs a lookup.
		{"other redirect", wire.Step{Kind: wire.KindHTTP, Follow: true, Target: "http://203.0.113.100/go"}, nil},
		{"redirect to a name", wire.Step{Kind: wire.KindHTTP, Follow: true, Target: "http://203.0.113.100/redirect?to=http://callback.lab.gatehouse.test/"}, nil},
		{"name", wire.Step{Kind: wire.KindHTTP, Target: "http://callback.lab.gatehouse.test/x"}, nil},
		{"proxy env", wire.Step{Kind: wire.KindHTTP, UseProxy: true, Target: "http://203.0.113.10/x"}, nil},
		{"proxy kind", wire.Step{Kind: wire.KindProxy, Target: "203.0.113.10:80"}, nil},
		{"dns", wire.Step{Kind: wire.KindDNS, Target: "x.oob.gatehouse.test", Server: "203.0.113.53:53"}, nil},
		{"tcp name", wire.Step{Kind: wire.KindTCP, Target: "callback.lab.gatehouse.test:9000"}, nil},
		{"bad port", wire.Step{Kind: wire.KindHTTP, Target: "http://203.0.113.10:99999/"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, stepFlows(tc.st))
		})
	}
}

func TestBlockedFlow(t *testing.T) {
	tcp := flow("tcp", "203.0.113.10", 80)
	udp := flow("udp", "203.0.113.10", 9001)
	ev := func(emitted uint64, arrived bool, connecting int, f lab.Flow) lab.FlowEvidence {
		return lab.FlowEvidence{Emitted: map[lab.Flow]uint64{f: emitted}, Arrived: map[lab.Flow]bool{f: arrived}, Connecting: map[lab.Flow]int{f: connecting}}
	}
	for _, tc := range []struct {
		name            string
		f               lab.Flow
		ev              lab.FlowEvidence
		before          uint64
		planned, wait   int
		early, settling bool
	}{
		{"tcp blocked", tcp, ev(2, false, 2, tcp), 0, 2, 2, true, true},
		{"tcp blocked late", tcp, ev(4, false, 2, tcp), 0, 2, 2, false, true},
		{"tcp arrived", tcp, ev(2, true, 2, tcp), 0, 2, 2, true, false},
		{"tcp one not connecting yet", tcp, ev(2, false, 1, tcp), 0, 2, 2, true, false},
		{"tcp SYNs counted before the run", tcp, ev(2, false, 2, tcp), 1, 2, 2, true, false},
		{"tcp sockets but no SYN counted (an inner namespace)", tcp, ev(0, false, 1, tcp), 0, 1, 1, true, false},
		{"udp blocked", udp, ev(1, false, 0, udp), 0, 1, 1, true, true},
		{"udp fewer packets than steps", udp, ev(1, false, 0, udp), 0, 2, 1, true, false},
		{"udp after the window", udp, ev(1, false, 0, udp), 0, 1, 1, false, false},
		{"udp arrived", udp, ev(1, true, 0, udp), 0, 1, 1, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.settling, blockedFlow(tc.f, tc.ev, tc.before, tc.planned, tc.wait, tc.early))
		})
	}
}

func TestLineTap(t *testing.T) {
	var lines []string
	var out strings.Builder
	tap := &lineTap{w: &out, line: func(b []byte) { lines = append(lines, string(b)) }}
	for _, chunk := range []string{"a", "b\nc", "\n", strings.Repeat("x", 70<<10), "\nd\n"} {
		n, err := tap.Write([]byte(chunk))
		require.NoError(t, err)
		require.Equal(t, len(chunk), n)
	}
	require.Equal(t, []string{"ab", "c", "d"}, lines, "a line over 64 KiB is skipped, the next is read")
	require.Equal(t, 8+70<<10, out.Len())
}

// The watch settles an attempt only on complete evidence, and never
// while something could hold a packet.
func TestSettleWatch(t *testing.T) {
	blocked := flow("tcp", "203.0.113.10", 9000)
	plan := wire.Plan{Steps: []wire.Step{
		{ID: "tcp", Kind: wire.KindTCP, Target: "203.0.113.10:9000"},
		{ID: "named", Kind: wire.KindTCP, Target: "callback.lab.gatehouse.test:9000"},
	}}
	for _, tc := range []struct {
		name    string
		arrived bool
		holds   []string
		want    string
	}{
		{"blocked", false, nil, "settle tcp"},
		{"arrived", true, nil, ""},
		{"held", false, []string{"queueing discipline tbf on the session's link"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			ev := lab.FlowEvidence{Emitted: map[lab.Flow]uint64{}, Arrived: map[lab.Flow]bool{}, Connecting: map[lab.Flow]int{}}
			fl := &fakeLab{holds: tc.holds, flows: func() lab.FlowEvidence {
				mu.Lock()
				defer mu.Unlock()
				return ev
			}}
			w := &settleWatch{s: &scenario{session: "s1"}, fl: fl, flows: map[string][]lab.Flow{}, perFlow: map[lab.Flow]int{},
				reported: map[string]bool{}, settled: map[string]time.Duration{}, steps: len(plan.Steps), before: map[lab.Flow]uint64{}}
			for _, st := range plan.Steps {
				if fs := stepFlows(st); fs != nil {
					w.flows[st.ID] = fs
					w.perFlow[fs[0]]++
				}
			}
			require.Len(t, w.flows, 1, "a step to a name cannot be settled")
			ctl, in := newControl([]byte(`{}`))
			w.ctl = ctl
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { w.run(ctx, 3*time.Second); close(done) }()
			mu.Lock()
			ev = lab.FlowEvidence{Emitted: map[lab.Flow]uint64{blocked: 1}, Arrived: map[lab.Flow]bool{blocked: tc.arrived}, Connecting: map[lab.Flow]int{blocked: 1}}
			mu.Unlock()
			rd := bufio.NewReader(in)
			first, err := rd.ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, "{}\n", first)
			if tc.want != "" {
				line, err := rd.ReadString('\n')
				require.NoError(t, err)
				require.Equal(t, tc.want+"\n", line)
				cancel()
				<-done
				require.Contains(t, w.finding(), "1 blocked attempt(s) settled")
				// Nothing of it arrived since: the settle stands.
				sc := w.s
				w.keepSettled(sc)
				require.Empty(t, settledArrived(context.Background(), fl, sc))
				// A SYN held back on a loaded machine reaches the lab after
				// the settle (issue 22, S1): the settle was wrong, and the
				// scenario cannot PASS on it.
				mu.Lock()
				ev = lab.FlowEvidence{Emitted: map[lab.Flow]uint64{blocked: 1}, Arrived: map[lab.Flow]bool{blocked: true}, Connecting: map[lab.Flow]int{}}
				mu.Unlock()
				require.Equal(t, []string{"tcp (tcp 203.0.113.10:9000)"}, settledArrived(context.Background(), fl, sc))
				return
			}
			// Nothing may come before the watch gives up (its limit) or is
			// told the run ended.
			go func() { time.Sleep(500 * time.Millisecond); cancel() }()
			rest, err := io.ReadAll(rd)
			require.NoError(t, err)
			require.Empty(t, string(rest))
			require.Empty(t, w.finding())
			<-done
		})
	}
}

// A verdict waits for the lab to be quiet twice in a row, and never longer
// than Settle; a lab that cannot tell gets the whole Settle, and so does
// one without the ability (asked once).
func TestSettleFor(t *testing.T) {
	for _, tc := range []struct {
		name      string
		quiet     bool
		err       error
		wholeWait bool
	}{
		{"quiet", true, nil, false},
		{"busy", false, nil, true},
		{"cannot tell", true, io.ErrUnexpectedEOF, true},
		{"unsupported", true, fmt.Errorf("fake: %w", ErrUnsupported), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			calls := 0
			q := &fakeLab{quiet: func() (bool, string, error) {
				mu.Lock()
				defer mu.Unlock()
				calls++
				return tc.quiet, "", tc.err
			}}
			r := &runner{cfg: Config{Lab: q, Settle: 200}}
			from := time.Now()
			require.NoError(t, r.settleFor(context.Background(), "s1"))
			took := time.Since(from)
			switch {
			case errors.Is(tc.err, ErrUnsupported):
				require.GreaterOrEqual(t, took, 200*time.Millisecond)
				require.Equal(t, 1, calls, "a lab without the ability is not asked again")
			case tc.wholeWait:
				require.GreaterOrEqual(t, took, 200*time.Millisecond)
				require.Greater(t, calls, 2)
			default:
				require.Equal(t, 2, calls, "two quiet readings are enough")
			}
		})
	}
}

// The exchange ends every send and receive of both sessions once all of
// them said they started (after exchangeHold), and ends nothing, only
// closing stdin, when one never did.
func TestExchangeCoord(t *testing.T) {
	plan := func(session string) wire.Plan {
		return wire.Plan{Session: session, Steps: []wire.Step{
			{ID: "send-tcp", Kind: wire.KindSend}, {ID: "receive-tcp", Kind: wire.KindReceive},
		}}
	}
	for _, tc := range []struct {
		name    string
		started map[string][]string
		wantEnd bool
	}{
		{"all started", map[string][]string{"s1": {"send-tcp", "receive-tcp"}, "s2": {"receive-tcp", "send-tcp"}}, true},
		{"one never listened", map[string][]string{"s1": {"send-tcp", "receive-tcp"}, "s2": {"send-tcp"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newExchangeCoord()
			readers := map[string]*bufio.Reader{}
			// Every party is expected before any runs, as exchange does.
			for _, s := range []string{"s1", "s2"} {
				x.expect(s, plan(s))
			}
			for _, s := range []string{"s1", "s2"} {
				require.True(t, x.covers(plan(s)))
				ctl, in := newControl([]byte("{}"))
				readers[s] = bufio.NewReader(in)
				stderr := x.join(s, plan(s), ctl, io.Discard)
				for _, id := range tc.started[s] {
					_, err := io.WriteString(stderr, wire.ActivePrefix+id+"\n")
					require.NoError(t, err)
				}
				// Lines that are not a start of its own plan change nothing.
				_, err := io.WriteString(stderr, wire.ActivePrefix+"send-other\nnoise\n")
				require.NoError(t, err)
			}
			require.False(t, x.covers(plan("s3")))
			done := make(chan struct{})
			go func() { x.run(context.Background(), 300*time.Millisecond); close(done) }()
			for s, rd := range readers {
				first, err := rd.ReadString('\n')
				require.NoError(t, err)
				require.Equal(t, "{}\n", first)
				rest, err := io.ReadAll(rd)
				require.NoError(t, err, s)
				if tc.wantEnd {
					require.Equal(t, "end receive-tcp send-tcp\n", sortEnd(string(rest)), s)
				} else {
					require.Empty(t, string(rest), s)
				}
			}
			<-done
		})
	}
}

// sortEnd puts an end line's IDs in order (the coordinator's map order is
// not fixed).
func sortEnd(line string) string {
	f := strings.Fields(line)
	if len(f) < 2 {
		return line
	}
	ids := f[1:]
	sort.Strings(ids)
	return f[0] + " " + strings.Join(ids, " ") + "\n"
}

// A control line never blocks its sender, even when no one reads the
// probe's stdin any more (the probe exited): it is dropped instead.
func TestControlNeverBlocks(t *testing.T) {
	ctl, in := newControl([]byte("{}"))
	sent := 0
	for i := 0; i < 100; i++ {
		if ctl.send(fmt.Sprintf("settle a%d", i)) == nil {
			sent++
		}
	}
	require.Equal(t, 64, sent, "the buffer takes 64 lines, the rest are dropped")
	ctl.close()
	require.ErrorIs(t, ctl.send("settle late"), io.ErrClosedPipe)
	ctl.close() // twice is harmless
	b, err := io.ReadAll(in)
	require.NoError(t, err)
	require.Equal(t, 1+64, strings.Count(string(b), "\n"))
	require.True(t, strings.HasPrefix(string(b), "{}\nsettle a0\n"))
}

// noteFlows keeps, by attempt, the opening packets of the flow that
// decides it: a redirect's second hop once the first reached the lab, the
// first hop otherwise; attempts to names are not noted (their flow is the
// lookup's answer).
func TestNoteFlows(t *testing.T) {
	inf := flow("tcp", lab.InferenceV4, 80)
	cb := flow("tcp", "203.0.113.10", 80)
	steps := []wire.Step{
		{ID: "tcp-callback", Kind: wire.KindTCP, Target: "203.0.113.10:80"},
		{ID: "redirect", Kind: wire.KindHTTP, Follow: true, Target: "http://" + lab.InferenceV4 + "/redirect?to=http://203.0.113.10/x"},
		{ID: "named", Kind: wire.KindTCP, Target: "callback.lab.gatehouse.test:80"},
	}
	before := lab.FlowEvidence{Emitted: map[lab.Flow]uint64{cb: 2}}
	for _, tc := range []struct {
		name                  string
		after                 lab.FlowEvidence
		redirectFlow          string
		tcpSent, redirectSent uint64
	}{
		{"the first hop arrived: the second decides", lab.FlowEvidence{Emitted: map[lab.Flow]uint64{cb: 3, inf: 1}, Arrived: map[lab.Flow]bool{inf: true}}, cb.String(), 1, 1},
		{"the first hop did not arrive: it decides", lab.FlowEvidence{Emitted: map[lab.Flow]uint64{cb: 2, inf: 1}, Arrived: map[lab.Flow]bool{}}, inf.String(), 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scenario{}
			noteFlows(s, steps, before, tc.after, nil)
			require.Equal(t, cb.String(), s.flowOf["tcp-callback"])
			require.Equal(t, tc.redirectFlow, s.flowOf["redirect"])
			require.Equal(t, tc.tcpSent, s.flowEmitted["tcp-callback"])
			require.Equal(t, tc.redirectSent, s.flowEmitted["redirect"])
			_, named := s.flowOf["named"]
			require.False(t, named, "an attempt to a name has no known flow")
		})
	}
}

// An attempt to a name that timed out is proven by opening packets toward
// where its connects began (the probe's Dialed notes), counted in its own
// plan; a lookup answered with no connect begun is proven by nothing; a
// lookup with no answer keeps the lookup's packet as its proof (no entry).
// On the code before, no attempt to a name was noted at all, so a probe
// starved between the answer and its connect passed as blocked.
func TestNoteNamedFlows(t *testing.T) {
	meta := flow("tcp", lab.MetadataV4, 80)
	meta6 := flow("tcp", lab.MetadataV6, 80)
	cbUDP := flow("udp", "203.0.113.10", 9001)
	steps := []wire.Step{
		{ID: "http-name", Kind: wire.KindHTTP, Target: "http://metadata.gatehouse.test/latest/meta-data/"},
		{ID: "udp-name", Kind: wire.KindUDP, Target: "callback.lab.gatehouse.test:9001"},
		{ID: "follows", Kind: wire.KindHTTP, Follow: true, Target: "http://metadata.gatehouse.test/redirect?to=x"},
		{ID: "proxied", Kind: wire.KindHTTP, UseProxy: true, Target: "http://metadata.gatehouse.test/"},
		{ID: "then", Kind: wire.KindHTTP, Target: "http://metadata.gatehouse.test/token", Then: &wire.Chain{Target: "http://metadata.gatehouse.test/creds"}},
		{ID: "port53", Kind: wire.KindUDP, Target: "callback.lab.gatehouse.test:53"},
	}
	before := lab.FlowEvidence{Emitted: map[lab.Flow]uint64{meta: 4, cbUDP: 1}}
	type want struct {
		flow  string // "" = not noted
		sent  uint64
		noted bool
	}
	for _, tc := range []struct {
		name  string
		reps  []evidence.Attempt
		after lab.FlowEvidence
		want  map[string]want
	}{
		{
			name: "its connects' packets were counted: proven",
			reps: []evidence.Attempt{
				{ID: "http-name", Outcome: "timeout", Answered: true, Dialed: []string{meta.Addr.String() + ":80", "[" + meta6.Addr.String() + "]:80"}},
				{ID: "udp-name", Outcome: "timeout", Answered: true, Dialed: []string{"203.0.113.10:9001"}},
			},
			after: lab.FlowEvidence{Emitted: map[lab.Flow]uint64{meta: 4, meta6: 1, cbUDP: 3}},
			want: map[string]want{
				"http-name": {meta.String() + " or " + meta6.String(), 1, true},
				"udp-name":  {cbUDP.String(), 2, true},
			},
		},
		{
			name: "a connect began and no packet of it was counted (a sibling's earlier packet does not count)",
			reps: []evidence.Attempt{
				{ID: "http-name", Outcome: "timeout", Answered: true, Dialed: []string{meta.Addr.String() + ":80"}},
			},
			after: lab.FlowEvidence{Emitted: map[lab.Flow]uint64{meta: 4}},
			want:  map[string]want{"http-name": {meta.String(), 0, true}},
		},
		{
			name:  "answered, no connect began: no flow, no packet",
			reps:  []evidence.Attempt{{ID: "http-name", Outcome: "timeout", Answered: true}},
			after: lab.FlowEvidence{Emitted: map[lab.Flow]uint64{meta: 9}},
			want:  map[string]want{"http-name": {"(its lookup was answered and no packet began toward port 80)", 0, true}},
		},
		{
			name:  "a note on another port than the plan's is no proof",
			reps:  []evidence.Attempt{{ID: "http-name", Outcome: "timeout", Answered: true, Dialed: []string{meta.Addr.String() + ":8080"}}},
			after: lab.FlowEvidence{Emitted: map[lab.Flow]uint64{flow("tcp", lab.MetadataV4, 8080): 1}},
			want:  map[string]want{"http-name": {"(its lookup was answered and no packet began toward port 80)", 0, true}},
		},
		{
			name:  "no answer: the lookup's packet stays the proof",
			reps:  []evidence.Attempt{{ID: "http-name", Outcome: "timeout"}},
			after: lab.FlowEvidence{Emitted: map[lab.Flow]uint64{}},
			want:  map[string]want{"http-name": {}},
		},
		{
			name: "redirects followed, or through a proxy: not noted",
			reps: []evidence.Attempt{
				{ID: "follows", Outcome: "timeout", Answered: true, Dialed: []string{meta.Addr.String() + ":80"}},
				{ID: "proxied", Outcome: "timeout", Answered: true, Dialed: []string{meta.Addr.String() + ":80"}},
			},
			after: lab.FlowEvidence{Emitted: map[lab.Flow]uint64{meta: 5}},
			want:  map[string]want{"follows": {}, "proxied": {}},
		},
		{
			name: "a second request, or port 53 (the lookup's own), is not noted",
			reps: []evidence.Attempt{
				{ID: "then", Outcome: "timeout", Answered: true, Dialed: []string{meta.Addr.String() + ":80"}},
				{ID: "port53", Outcome: "timeout", Answered: true, Dialed: []string{"203.0.113.10:53"}},
			},
			after: lab.FlowEvidence{Emitted: map[lab.Flow]uint64{meta: 5}},
			want:  map[string]want{"then": {}, "port53": {}},
		},
		{
			name:  "an address noted twice is one flow, counted once",
			reps:  []evidence.Attempt{{ID: "http-name", Outcome: "timeout", Answered: true, Dialed: []string{meta.Addr.String() + ":80", meta.Addr.String() + ":80"}}},
			after: lab.FlowEvidence{Emitted: map[lab.Flow]uint64{meta: 5}},
			want:  map[string]want{"http-name": {meta.String(), 1, true}},
		},
		{
			name: "the latest report of the attempt decides",
			reps: []evidence.Attempt{
				{ID: "http-name", Outcome: "timeout", Answered: true, Dialed: []string{meta.Addr.String() + ":80"}},
				{ID: "http-name", Outcome: "timeout", Answered: true},
			},
			after: lab.FlowEvidence{Emitted: map[lab.Flow]uint64{meta: 5}},
			want:  map[string]want{"http-name": {"(its lookup was answered and no packet began toward port 80)", 0, true}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scenario{session: "s1"}
			for _, r := range tc.reps {
				r.Session = "s1"
				s.attempts = append(s.attempts, r)
			}
			s.attempts = append(s.attempts, evidence.Attempt{Session: "other", ID: "udp-name", Outcome: "timeout", Answered: true})
			noteFlows(s, steps, before, tc.after, s.attempts)
			for id, w := range tc.want {
				f, noted := s.flowOf[id]
				require.Equal(t, w.noted, noted, id)
				require.Equal(t, w.flow, f, id)
				require.Equal(t, w.sent, s.flowEmitted[id], id)
			}
		})
	}
}

// Flow records that could not be read around a plan in which attempts
// timed out leave the accounting in error (INCONCLUSIVE): those attempts
// would otherwise stand on a packet toward their destination, which a
// sibling may have sent. Before, the failure was dropped silently.
func TestFlowsUnreadLeaveNoPass(t *testing.T) {
	timedOut := []evidence.Attempt{{ID: "a", Outcome: "refused"}, {ID: "b", Outcome: "timeout"}}
	for _, tc := range []struct {
		name    string
		err     error
		reps    []evidence.Attempt
		wantErr bool
	}{
		{"read", nil, timedOut, false},
		{"a lab without flow records (a fake)", fmt.Errorf("fake: %w", ErrUnsupported), timedOut, false},
		{"unreadable, nothing timed out", errors.New("the accounting table cannot be read"), timedOut[:1], false},
		{"unreadable, an attempt timed out", errors.New("the accounting table cannot be read"), timedOut, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scenario{session: "s1"}
			flowsUnread(s, tc.err, tc.reps)
			require.Equal(t, tc.wantErr, s.acctErr != "", s.acctErr)
			require.Equal(t, tc.wantErr, len(s.findings) == 1, s.findings)
		})
	}
}
