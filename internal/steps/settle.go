package steps

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/legacyip"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// Settling blocked attempts early. A dropped packet gives its sender no
// answer, so a blocked attempt waits out attemptTimeout. But the lab is on
// this host and the kernel keeps the facts (lab.Flows): what the session's
// kernel emitted toward each flow, whether any of it reached the lab, and
// which TCP connects are still unanswered. When, for a running attempt,
// those say it left the sandbox's sender and nothing of it arrived, and
// nothing on the way can hold a packet (lab.Holds), the harness tells the
// probe to end it now ("settle ID", internal/probe/settle.go). Its outcome is the
// timeout it would have met; the verdict, made from the lab's records as
// always, cannot change, because nothing more of that flow could arrive.
//
// Where the harness cannot see the packet it keeps the real timeout: an
// attempt through a proxy or to a name (its first packet is a lookup whose
// answer decides where the next goes), one whose sandbox has a network
// namespace of its own inside the session's (its sockets are not in the
// session's table), a target with no lab session, an agent's run, and a
// sandbox with a network stack of its own (gVisor with --network=sandbox:
// its TCP state is not in the session's socket table).

const (
	settlePoll = 15 * time.Millisecond
	// settleInFlight is the wait, once the evidence holds, before it is
	// read again and acted on: a packet that left is at the lab within
	// microseconds (a veth with no queue), so this is a wide margin.
	settleInFlight = 30 * time.Millisecond
	// settleWindow bounds when a UDP or ICMP attempt may be settled on
	// packet counts: each sends one packet and resends nothing sooner.
	// TCP attempts are settled on their own SYN_SENT sockets instead.
	settleWindow = 900 * time.Millisecond
)

// stepFlows are the flows a step's packets open, in order, when the
// harness can know them without a lookup: tcp, udp and icmp to an address,
// http(s) to an address without a proxy, and, for a redirect through the
// lab's own /redirect endpoint, the hop it redirects to. nil: not known.
func stepFlows(st wire.Step) []lab.Flow {
	switch st.Kind {
	case wire.KindTCP, wire.KindUDP:
		ap, err := netip.ParseAddrPort(st.Target)
		if err != nil {
			return nil
		}
		return []lab.Flow{{Addr: ap.Addr().Unmap(), Proto: st.Kind, Port: ap.Port()}}
	case wire.KindICMP:
		a, err := netip.ParseAddr(st.Target)
		if err != nil {
			return nil
		}
		return []lab.Flow{{Addr: a.Unmap(), Proto: "icmp"}}
	case wire.KindHTTP:
		if st.UseProxy {
			return nil
		}
		first, ok := urlFlow(st.Target)
		if !ok {
			return nil
		}
		if !st.Follow {
			return []lab.Flow{first}
		}
		u, _ := url.Parse(st.Target)
		if u.Path != "/redirect" {
			return nil // where it goes next is the server's word
		}
		next, ok := urlFlow(u.Query().Get("to"))
		if !ok {
			return nil
		}
		return []lab.Flow{first, next}
	}
	return nil
}

// urlFlow is the TCP flow of an http(s) URL whose host is an address.
func urlFlow(raw string) (lab.Flow, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return lab.Flow{}, false
	}
	a, ok := legacyip.Addr(u.Hostname())
	if !ok {
		return lab.Flow{}, false
	}
	port := 80
	if u.Scheme == "https" {
		port = 443
	}
	if p := u.Port(); p != "" {
		var err error
		if port, err = strconv.Atoi(p); err != nil || port <= 0 || port > 65535 {
			return lab.Flow{}, false
		}
	}
	return lab.Flow{Addr: a.Unmap(), Proto: "tcp", Port: uint16(port)}, true
}

// settleWatch follows one probe run: which attempts reported, and which
// the evidence lets it settle.
type settleWatch struct {
	r       *runner
	s       *scenario
	fl      Lab
	flows   map[string][]lab.Flow // by step ID, only the knowable ones
	perFlow map[lab.Flow]int      // steps of the plan opening each flow
	before  map[lab.Flow]uint64   // emitted before the run
	ctl     *control
	start   time.Time
	steps   int // in the plan

	mu       sync.Mutex
	reported map[string]bool
	settled  map[string]time.Duration // since start
}

// newSettleWatch returns nil when nothing of the plan can be settled here.
func (r *runner) newSettleWatch(ctx context.Context, s *scenario, p wire.Plan) *settleWatch {
	if !s.attached {
		return nil
	}
	fl := r.lab()
	w := &settleWatch{r: r, s: s, fl: fl, flows: map[string][]lab.Flow{}, perFlow: map[lab.Flow]int{},
		reported: map[string]bool{}, settled: map[string]time.Duration{}, steps: len(p.Steps)}
	for _, st := range p.Steps {
		if fs := stepFlows(st); fs != nil {
			w.flows[st.ID] = fs
			for _, f := range fs {
				w.perFlow[f]++
			}
		}
	}
	if len(w.flows) == 0 {
		return nil
	}
	ev, err := fl.Flows(ctx, s.session)
	if err != nil {
		// No evidence (ErrUnsupported included: a lab without flow
		// evidence), no settling: the timeout stands.
		return nil
	}
	w.before = ev.Emitted
	return w
}

// stdout wraps the probe's output so that each report line marks its
// attempt done. What it reads is hostile: it only decides which attempts
// are still worth watching; settling rests on the kernel's records.
func (w *settleWatch) stdout(out io.Writer) io.Writer {
	return &lineTap{w: out, line: func(b []byte) {
		var rep struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(b, &rep) == nil && rep.ID != "" {
			w.mu.Lock()
			w.reported[rep.ID] = true
			w.mu.Unlock()
		}
	}}
}

// run watches until ctx ends (the probe's run returned), every attempt
// reported or limit passes, then closes the probe's stdin: a target whose
// Exec waits for its stdin to end (os/exec does) is not held up.
func (w *settleWatch) run(ctx context.Context, limit time.Duration) {
	defer w.ctl.close()
	w.start = time.Now()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(settlePoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			return
		case <-tick.C:
		}
		w.mu.Lock()
		all := len(w.reported) >= w.steps
		w.mu.Unlock()
		if all {
			return
		}
		ids := w.candidates(ctx)
		if len(ids) == 0 {
			continue
		}
		if holds, err := w.fl.Holds(ctx, w.s.session); err != nil || len(holds) > 0 {
			return // something could hold a packet: every attempt runs its course
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(settleInFlight):
		}
		again := map[string]bool{}
		for _, id := range w.candidates(ctx) {
			again[id] = true
		}
		var now []string
		for _, id := range ids {
			if again[id] {
				now = append(now, id)
			}
		}
		if len(now) == 0 {
			continue
		}
		if err := w.ctl.send("settle " + strings.Join(now, " ")); err != nil {
			return
		}
		at := time.Since(w.start)
		w.mu.Lock()
		for _, id := range now {
			w.settled[id] = at
		}
		w.mu.Unlock()
	}
}

// candidates are the running attempts the evidence lets settle now.
func (w *settleWatch) candidates(ctx context.Context) []string {
	w.mu.Lock()
	var pending []string
	for id := range w.flows {
		if _, done := w.settled[id]; !w.reported[id] && !done {
			pending = append(pending, id)
		}
	}
	w.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	ev, err := w.fl.Flows(ctx, w.s.session)
	if err != nil {
		return nil
	}
	waiting := map[lab.Flow]int{} // pending attempts by the flow they would be stuck on
	for _, id := range pending {
		fs := w.flows[id]
		waiting[fs[len(fs)-1]]++
	}
	early := time.Since(w.start) < settleWindow
	var out []string
	for _, id := range pending {
		fs := w.flows[id]
		f := fs[len(fs)-1]
		if !blockedFlow(f, ev, w.before[f], w.perFlow[f], waiting[f], early) {
			continue
		}
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// blockedFlow says whether the evidence shows every attempt still waiting
// on flow f blocked: nothing of f reached the lab, and each of them is
// known to have sent its opening packet, which the kernel counted: for TCP,
// a SYN_SENT socket each (an unanswered connect is one socket) and at least
// as many SYNs counted since the run began; for UDP and ICMP, before any
// could have resent, at least one packet for every step of the plan that
// opens f.
func blockedFlow(f lab.Flow, ev lab.FlowEvidence, before uint64, planned, waiting int, early bool) bool {
	if ev.Arrived[f] {
		return false
	}
	sent := ev.Emitted[f] - min(before, ev.Emitted[f])
	if f.Proto == "tcp" {
		return ev.Connecting[f] >= waiting && sent >= uint64(waiting)
	}
	return early && sent >= uint64(planned)
}

// keepSettled notes on the scenario the attempts settled in this run and
// the flow each was stuck on, for settledArrived at the verdict.
func (w *settleWatch) keepSettled(s *scenario) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id := range w.settled {
		if s.settled == nil {
			s.settled = map[string]lab.Flow{}
		}
		fs := w.flows[id]
		s.settled[id] = fs[len(fs)-1]
	}
}

// settledArrived reads the session's flows again when the scenario is
// judged (the lab quiet by then): a settled attempt of whose flow a packet
// reached the lab after all was settled wrongly (a SYN held in a starved
// softirq longer than the settle's margin, which met a closed socket), and
// the lab may have missed what it carried. It lists such attempts with
// their flow; nil when none, or nothing was settled. A reading that fails
// cannot clear a settle: every settled attempt is then listed. (The lab
// keeps an arrival for ten minutes after its last packet; a scenario is
// judged long before.)
func settledArrived(ctx context.Context, fl Lab, s *scenario) []string {
	if len(s.settled) == 0 {
		return nil
	}
	ids := make([]string, 0, len(s.settled))
	for id := range s.settled {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	ev, err := fl.Flows(ctx, s.session)
	var out []string
	for _, id := range ids {
		f := s.settled[id]
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("%s (%s: the flows could not be read again: %v)", id, f, err))
		case ev.Arrived[f]:
			out = append(out, fmt.Sprintf("%s (%s)", id, f))
		}
	}
	return out
}

// finding says what was settled, for the scenario's record.
func (w *settleWatch) finding() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.settled) == 0 {
		return ""
	}
	var last time.Duration
	for _, d := range w.settled {
		last = max(last, d)
	}
	return fmt.Sprintf("%d blocked attempt(s) settled by %s instead of their %s timeout: the kernel counted them leave the sandbox's sender, nothing of them reached the lab, and nothing on the way could hold a packet",
		len(w.settled), last.Round(time.Millisecond), attemptTimeout)
}

// lineTap passes writes through and hands each complete line (up to 64
// KiB; longer ones are skipped) to line.
type lineTap struct {
	w    io.Writer
	line func([]byte)
	buf  []byte
	skip bool
}

func (t *lineTap) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			if !t.skip && len(t.buf)+len(rest) <= 64<<10 {
				t.buf = append(t.buf, rest...)
			} else {
				t.skip, t.buf = true, t.buf[:0]
			}
			break
		}
		if !t.skip && len(t.buf)+i <= 64<<10 {
			t.line(append(t.buf, rest[:i]...))
		}
		t.buf, t.skip = t.buf[:0], false
		rest = rest[i+1:]
	}
	return n, err
}

// control is a controlled probe's stdin: the plan, then control lines
// from whoever acts on the run (the settle watch, an exchange), until
// closed. Sending never blocks: the probe may have exited and its stdin
// copier with it, and a watcher must not hang on that; a line that finds
// the buffer full is dropped (the attempt then keeps its own timeout).
type control struct {
	mu     sync.Mutex
	lines  chan string
	closed bool
}

// newControl returns the control and the probe's stdin.
func newControl(plan []byte) (*control, io.Reader) {
	c := &control{lines: make(chan string, 64)}
	return c, io.MultiReader(bytes.NewReader(append(plan, '\n')), &controlReader{c: c})
}

func (c *control) send(line string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return io.ErrClosedPipe
	}
	select {
	case c.lines <- line + "\n":
		return nil
	default:
		return errors.New("control: the probe is not reading its stdin")
	}
}

// close ends the probe's stdin once the lines sent are read; later sends
// fail.
func (c *control) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		close(c.lines)
	}
}

// controlReader reads the control's lines, then EOF once it is closed.
type controlReader struct {
	c    *control
	rest string
}

func (r *controlReader) Read(p []byte) (int, error) {
	if r.rest == "" {
		line, ok := <-r.c.lines
		if !ok {
			return 0, io.EOF
		}
		r.rest = line
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}
