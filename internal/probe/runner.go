package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// Run performs every step of plan, at most plan.Parallel at once (0 = all),
// each under its own plan.Timeout() deadline, and writes one Report JSON line
// to w as each finishes. Outcomes are data; Run fails only when w does.
func Run(ctx context.Context, plan wire.Plan, w io.Writer) error {
	return RunControlled(ctx, plan, w, nil, nil)
}

// RunControlled is Run with the harness's control lines read from control
// (nil: none), which may settle or end running attempts early (settle.go);
// each send and receive says on progress when it starts.
func RunControlled(ctx context.Context, plan wire.Plan, w io.Writer, control io.Reader, progress io.Writer) error {
	n := plan.Parallel
	if n <= 0 || n > len(plan.Steps) {
		n = max(len(plan.Steps), 1)
	}
	sem := make(chan struct{}, n)
	var (
		mu   sync.Mutex
		werr error
		wg   sync.WaitGroup
		enc  = json.NewEncoder(w)
		rn   = runner{timeout: plan.Timeout(), tag: plan.Canary}
	)
	if control != nil {
		rn.settler = newSettler()
		if progress != nil {
			var pmu sync.Mutex
			rn.active = func(id string) {
				pmu.Lock()
				defer pmu.Unlock()
				_, _ = io.WriteString(progress, wire.ActivePrefix+id+"\n")
			}
		}
		cctx, stop := context.WithCancel(ctx)
		defer stop()
		go rn.settler.read(cctx, control)
	}
	for _, step := range plan.Steps {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			rep := rn.do(ctx, step)
			mu.Lock()
			defer mu.Unlock()
			if werr == nil {
				if err := enc.Encode(rep); err != nil {
					werr = fmt.Errorf("probe: write report: %w", err)
				}
			}
		})
	}
	wg.Wait()
	return werr
}

type runner struct {
	timeout time.Duration
	tag     string          // the session's tag, carried in band (see SessionHeader)
	settler *settler        // nil unless the harness may settle attempts
	active  func(id string) // says a send or receive started (nil: no one asks)
}

// do runs one step. A panic in an attempt becomes an error report rather
// than a lost line: the harness would otherwise see a silent gap.
func (r runner) do(ctx context.Context, s wire.Step) (rep wire.Report) {
	began := time.Now() // keeps the monotonic reading that Start's UTC() drops
	rep = wire.Report{ID: s.ID, Kind: s.Kind, Target: s.Target, Start: began.UTC()}
	ctx, cancel := context.WithTimeout(withAttempt(withTag(ctx, r.tag), s.ID), r.timeout)
	defer cancel()
	if r.settler != nil {
		var release func()
		ctx, release = r.settler.start(ctx, s.ID)
		defer release()
		ctx = endAsDeadline{ctx}
	}
	defer func() {
		if p := recover(); p != nil {
			rep = finish(rep, fmt.Errorf("probe: attempt panicked: %v", p), began)
		}
	}()
	defer func() {
		// Ended by the harness: reported as the timeout it would have run
		// into, whatever the attempt made of the cancellation.
		if settled(ctx) && (rep.Outcome == wire.OutcomeError || rep.Outcome == wire.OutcomeTimeout) {
			rep.Outcome, rep.Error = wire.OutcomeTimeout, errSettled.Error()
		}
	}()
	var err error
	switch s.Kind {
	case wire.KindHTTP:
		err = doHTTP(ctx, s, &rep)
	case wire.KindProxy:
		err = doProxy(ctx, s, &rep)
		if s.Again && ctx.Err() == nil {
			// The second try's outcome is the one reported: it is the one
			// the first answer set up.
			again := wire.Report{ID: rep.ID, Kind: rep.Kind, Target: rep.Target, Start: rep.Start}
			err = doProxy(ctx, s, &again)
			again.Bytes += rep.Bytes
			rep = again
		}
	case wire.KindTCP:
		err = doTCP(ctx, s, &rep)
	case wire.KindUDP:
		err = doUDP(ctx, s, &rep)
	case wire.KindICMP:
		err = doICMP(ctx, s, &rep)
	case wire.KindDNS:
		err = doDNS(ctx, s, &rep)
	case wire.KindRead:
		from := time.Now()
		rep, err = blocking(ctx, rep, func(r *wire.Report) error { return doRead(s, r) })
		active(&rep, from)
	case wire.KindWrite:
		rep, err = blocking(ctx, rep, func(r *wire.Report) error { return doWrite(s, r) })
	case wire.KindList:
		rep, err = blocking(ctx, rep, func(r *wire.Report) error { return doList(s, r) })
	case wire.KindStash:
		rep, err = blocking(ctx, rep, func(r *wire.Report) error { return doStash(s, r) })
	case wire.KindFind:
		from := time.Now()
		err = doFind(ctx, s, &rep) // keeps what it found when the deadline cuts it (see gather)
		active(&rep, from)
	case wire.KindSend:
		if r.active != nil {
			r.active(s.ID)
		}
		err = doSend(ctx, s, &rep)
	case wire.KindReceive:
		if r.active != nil {
			r.active(s.ID)
		}
		err = doReceive(ctx, s, &rep)
	case wire.KindHeartbeat:
		err = doHeartbeat(ctx, s, &rep)
	case wire.KindHunt:
		err = doHunt(ctx, s, &rep)
	case wire.KindTakedown:
		err = doTakedown(ctx, s, &rep)
	case wire.KindHostCheck:
		if s.Target == "mounts" || s.Target == "engines" {
			err = doHostScan(ctx, s, &rep)
			break
		}
		rep, err = blocking(ctx, rep, func(r *wire.Report) error { return doHostCheck(s, r) })
	default:
		err = fmt.Errorf("unknown kind %q", s.Kind)
	}
	return finish(rep, err, began)
}

// active sets a read's or search's active window: from its start to now.
// The two-session gates need it to know the other session was alive
// while this one looked.
func active(rep *wire.Report, from time.Time) {
	rep.ActiveFrom, rep.ActiveTo = from.UTC(), time.Now().UTC()
}

// blocking runs a file operation that has no deadline of its own (a FIFO or
// a /proc file can block in open or read) and gives up when ctx ends. The
// operation fills a copy of rep, so an abandoned one cannot race with the
// report being written; it dies with the process, which is short-lived.
func blocking(ctx context.Context, rep wire.Report, fn func(*wire.Report) error) (wire.Report, error) {
	type result struct {
		rep wire.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		r := rep
		defer func() {
			if p := recover(); p != nil {
				done <- result{rep, fmt.Errorf("probe: attempt panicked: %v", p)}
			}
		}()
		err := fn(&r)
		done <- result{r, err}
	}()
	select {
	case res := <-done:
		return res.rep, res.err
	case <-ctx.Done():
		return rep, ctx.Err()
	}
}
