package probe

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// Settling. A blocked network attempt cannot tell a dropped packet from a
// slow answer, so on its own it waits out its timeout. The harness can tell:
// the lab is on the same host and it sees, from outside, what the sandbox's
// kernel emitted and what reached the lab. When that evidence is complete
// for an attempt, the harness writes a control line on the probe's stdin:
//
//	settle ID [ID...]
//
// and the probe ends those attempts now, reporting them exactly as a
// timeout (the outcome they would have had), with the reason in Error. IDs
// that are not running (unknown, done, not started) are ignored: an attempt
// that has not started has sent nothing, so nothing about it is settled.
// Unknown lines are ignored, so an older harness and a newer probe agree.
//
//	end ID [ID...]
//
// ends those attempts as if their duration (DurationMS: a send, a receive)
// had run out: the two-session gates hold their channels open only until
// both sessions have offered and listened long enough (the harness decides
// when, from the "@active ID" lines the probe writes on stderr as each of
// them starts, and checks the overlap afterwards from the reports).

// maxControlLine bounds one control line (IDs are at most maxIDLen bytes).
const maxControlLine = 1 << 20

// errSettled is the cause an attempt's context ends with when settled.
var errSettled = errors.New(wire.SettledPrefix + ": the kernel counted its packets leave and nothing of them reached the lab")

// errEnded is the cause of an attempt the harness ended ("end").
var errEnded = errors.New("ended by the harness")

// settler maps running attempts to the cancel of their context.
type settler struct {
	mu      sync.Mutex
	running map[string]context.CancelCauseFunc
}

func newSettler() *settler {
	return &settler{running: map[string]context.CancelCauseFunc{}}
}

// start registers an attempt and returns its context and a release.
func (s *settler) start(ctx context.Context, id string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	s.mu.Lock()
	s.running[id] = cancel
	s.mu.Unlock()
	return ctx, func() {
		s.mu.Lock()
		delete(s.running, id)
		s.mu.Unlock()
		cancel(nil)
	}
}

func (s *settler) cancel(ids []string, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if cancel, ok := s.running[id]; ok {
			cancel(cause)
		}
	}
}

// read applies control lines from r until EOF or ctx ends.
func (s *settler) read(ctx context.Context, r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxControlLine)
	for sc.Scan() && ctx.Err() == nil {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) > 1 && f[0] == "settle":
			s.cancel(f[1:], errSettled)
		case len(f) > 1 && f[0] == "end":
			s.cancel(f[1:], errEnded)
		}
	}
}

// settled says whether ctx was ended by a settle.
func settled(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errSettled)
}

// endAsDeadline makes an attempt the harness ended ("end") look, to the
// attempt and everything derived from it, like one whose time ran out:
// a send or receive then ends exactly as at the end of its duration.
type endAsDeadline struct{ context.Context }

func (c endAsDeadline) Err() error {
	if errors.Is(context.Cause(c.Context), errEnded) {
		return context.DeadlineExceeded
	}
	return c.Context.Err()
}
