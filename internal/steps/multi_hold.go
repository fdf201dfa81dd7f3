package steps

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// Bounds of a holder (see holdAll).
const (
	holdReadyWait = 20 * time.Second // for it to say it runs
	holdLimit     = 3 * time.Minute  // its Exec, whatever happens
	holdEndWait   = 10 * time.Second // for it to end once released
)

// holder is one `probe hold` process in a party's session.
type holder struct {
	pt     *party
	stdin  *io.PipeWriter
	ready  chan struct{}
	done   chan struct{}
	cancel context.CancelFunc

	mu      sync.Mutex
	readyAt time.Time // when its "holding" line reached the harness
	endedAt time.Time // when its Exec returned
	err     error
}

// Write watches the holder's output for its ready line.
func (h *holder) Write(b []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.readyAt.IsZero() && strings.HasPrefix(string(b), wire.HoldReady) {
		h.readyAt = time.Now()
		close(h.ready)
	}
	return len(b), nil
}

// holdAll starts a holder in each party's session and waits until each
// says it runs (or gives up waiting), so that while the other session
// looks, this one has a live process: one whose /proc entry, argv and
// environment carry the session's value, whose working folder is its
// storage. The returned release ends them all, once every party is
// done, and sets each party's live window: from the ready line to the
// release, or to the holder's own end if it ended first. A holder that
// never said it ran leaves the window empty, and the overlap rule then
// finds no live process: INCONCLUSIVE, never PASS.
func (r *runner) holdAll(ctx context.Context, ps []*party) (release func()) {
	hs := make([]*holder, len(ps))
	for i, pt := range ps {
		hs[i] = r.hold(ctx, pt)
	}
	timeout := time.NewTimer(holdReadyWait)
	defer timeout.Stop()
	for _, h := range hs {
		select {
		case <-h.ready:
			continue
		case <-h.done:
			continue
		case <-timeout.C:
		case <-ctx.Done():
		}
		break // out of time: go on, and let the overlap rule judge
	}
	return func() {
		released := time.Now()
		for _, h := range hs {
			h.stdin.Close()
		}
		for _, h := range hs {
			select {
			case <-h.done:
			case <-time.After(holdEndWait):
			}
			h.cancel()
			<-h.done
			h.mu.Lock()
			live := evidence.Window{From: h.readyAt, To: released}
			if h.endedAt.Before(released) {
				live.To = h.endedAt // it did not wait for the release
			}
			if h.readyAt.IsZero() {
				live = evidence.Window{}
			}
			h.pt.live = live
			if h.err != nil {
				h.pt.s.findings = append(h.pt.s.findings, fmt.Sprintf("holder in %s: %v", h.pt.s.session, h.err))
			}
			h.mu.Unlock()
			r.traceWindow(h.pt, "hold", live.From, live.To)
		}
	}
}

// hold starts one holder; its Exec runs until released or holdLimit.
func (r *runner) hold(ctx context.Context, pt *party) *holder {
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), holdLimit)
	pr, pw := io.Pipe()
	h := &holder{pt: pt, stdin: pw, ready: make(chan struct{}), done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(h.done)
		defer pr.Close()
		_, err := pt.s.sess.Exec(hctx, targets.Command{
			Args:   []string{wire.SandboxPath, "hold", pt.s.canary, OwnStorage},
			Env:    map[string]string{"GATEHOUSE_HOLD": pt.s.canary},
			Stdin:  pr,
			Stdout: h,
			Stderr: io.Discard,
		})
		h.mu.Lock()
		h.endedAt, h.err = time.Now(), err
		h.mu.Unlock()
	}()
	return h
}
