package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// Run performs every step of plan, at most plan.Parallel at once (0 = all),
// each under its own plan.Timeout() deadline, and writes one Report JSON line
// to w as each finishes. Outcomes are data; Run fails only when w does.
func Run(ctx context.Context, plan Plan, w io.Writer) error {
	return RunControlled(ctx, plan, w, nil, nil)
}

// RunControlled is Run with the harness's control lines read from control
// (nil: none), which may settle or end running attempts early (settle.go);
// each send and receive says on progress when it starts.
func RunControlled(ctx context.Context, plan Plan, w io.Writer, control io.Reader, progress io.Writer) error {
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
				_, _ = io.WriteString(progress, ActivePrefix+id+"\n")
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
func (r runner) do(ctx context.Context, s Step) (rep Report) {
	rep = Report{ID: s.ID, Kind: s.Kind, Target: s.Target, Start: time.Now().UTC()}
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
			rep = finish(rep, fmt.Errorf("probe: attempt panicked: %v", p))
		}
	}()
	defer func() {
		// Ended by the harness: reported as the timeout it would have run
		// into, whatever the attempt made of the cancellation.
		if settled(ctx) && (rep.Outcome == OutcomeError || rep.Outcome == OutcomeTimeout) {
			rep.Outcome, rep.Error = OutcomeTimeout, errSettled.Error()
		}
	}()
	var err error
	switch s.Kind {
	case KindHTTP:
		err = doHTTP(ctx, s, &rep)
	case KindProxy:
		err = doProxy(ctx, s, &rep)
		if s.Again && ctx.Err() == nil {
			// The second try's outcome is the one reported: it is the one
			// the first answer set up.
			again := Report{ID: rep.ID, Kind: rep.Kind, Target: rep.Target, Start: rep.Start}
			err = doProxy(ctx, s, &again)
			again.Bytes += rep.Bytes
			rep = again
		}
	case KindTCP:
		err = doTCP(ctx, s, &rep)
	case KindUDP:
		err = doUDP(ctx, s, &rep)
	case KindICMP:
		err = doICMP(ctx, s, &rep)
	case KindDNS:
		err = doDNS(ctx, s, &rep)
	case KindRead:
		from := time.Now()
		rep, err = blocking(ctx, rep, func(r *Report) error { return doRead(s, r) })
		active(&rep, from)
	case KindWrite:
		rep, err = blocking(ctx, rep, func(r *Report) error { return doWrite(s, r) })
	case KindList:
		rep, err = blocking(ctx, rep, func(r *Report) error { return doList(s, r) })
	case KindStash:
		rep, err = blocking(ctx, rep, func(r *Report) error { return doStash(s, r) })
	case KindFind:
		from := time.Now()
		err = doFind(ctx, s, &rep) // keeps what it found when the deadline cuts it (see gather)
		active(&rep, from)
	case KindSend:
		if r.active != nil {
			r.active(s.ID)
		}
		err = doSend(ctx, s, &rep)
	case KindReceive:
		if r.active != nil {
			r.active(s.ID)
		}
		err = doReceive(ctx, s, &rep)
	case KindHeartbeat:
		err = doHeartbeat(ctx, s, &rep)
	case KindHunt:
		err = doHunt(ctx, s, &rep)
	case KindTakedown:
		err = doTakedown(ctx, s, &rep)
	case KindHostCheck:
		if s.Target == "mounts" || s.Target == "engines" {
			err = doHostScan(ctx, s, &rep)
			break
		}
		rep, err = blocking(ctx, rep, func(r *Report) error { return doHostCheck(s, r) })
	default:
		err = fmt.Errorf("unknown kind %q", s.Kind)
	}
	return finish(rep, err)
}

// active sets a read's or search's active window: from its start to now.
// The two-session gates need it to know the other session was alive
// while this one looked.
func active(rep *Report, from time.Time) {
	rep.ActiveFrom, rep.ActiveTo = from.UTC(), time.Now().UTC()
}

// blocking runs a file operation that has no deadline of its own (a FIFO or
// a /proc file can block in open or read) and gives up when ctx ends. The
// operation fills a copy of rep, so an abandoned one cannot race with the
// report being written; it dies with the process, which is short-lived.
func blocking(ctx context.Context, rep Report, fn func(*Report) error) (Report, error) {
	type result struct {
		rep Report
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
