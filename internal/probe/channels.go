package probe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// channelTick is how often a sender offers its value again and a poller
// looks again: two sessions that start a little apart still meet.
const channelTick = 100 * time.Millisecond

// channel is one parsed send/receive target.
type channel struct{ scheme, rest string }

func parseChannel(target string) (channel, error) {
	scheme, rest, ok := strings.Cut(target, ":")
	if !ok || rest == "" {
		return channel{}, fmt.Errorf("channel %q is not SCHEME:WHERE", target)
	}
	return channel{scheme, rest}, nil
}

// doSend offers Payload on the channel until DurationMS ends. It is
// "completed" when at least one offer went out without an error. Its
// active window is the whole time it kept offering (files stay in place
// until the end), failed tries included: the harness pairs it with the
// other session's receive window on the same channel.
func doSend(ctx context.Context, s wire.Step, rep *wire.Report) error {
	ch, err := parseChannel(s.Target)
	if err != nil {
		return err
	}
	var send func(context.Context) error
	var done func()
	switch ch.scheme {
	case "tcp", "udp":
		send = func(ctx context.Context) error { return sendNet(ctx, ch, s.Payload) }
	case "dir":
		send, done = sendFiles(ch.rest, s.Payload, func(p string) { wrote(rep, p) })
	case "unix":
		send = func(ctx context.Context) error { return sendUnix(ctx, ch.rest, s.Payload) }
	case "abstract":
		send = func(ctx context.Context) error { return sendAbstract(ctx, ch.rest, s.Payload) }
	case "shm":
		send = func(ctx context.Context) error { return sendShm(ch.rest, s.Payload) }
	case "mq":
		send = func(context.Context) error { return sendMq(ch.rest, s.Payload) }
	case "proc":
		send = func(context.Context) error { return offeredInProc(ch.rest, s.Payload) }
	default:
		return fmt.Errorf("unknown channel scheme %q", ch.scheme)
	}
	from := time.Now()
	defer func() { rep.ActiveFrom, rep.ActiveTo = from.UTC(), time.Now().UTC() }()
	if done != nil {
		defer done()
	}
	return repeat(ctx, stepDuration(s), func(ctx context.Context) error {
		err := send(ctx)
		if err == nil {
			rep.Bytes++
		}
		return err
	}, rep)
}

// repeat calls fn every channelTick for d (or until ctx ends). It returns
// nil if any call succeeded, else the last error.
func repeat(ctx context.Context, d time.Duration, fn func(context.Context) error, rep *wire.Report) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var last error
	ok := false
	for {
		tctx, tcancel := context.WithTimeout(ctx, 4*channelTick)
		if err := fn(tctx); err != nil {
			last = err
		} else {
			ok = true
		}
		tcancel()
		select {
		case <-ctx.Done():
			if ok {
				return nil
			}
			if last == nil {
				last = ctx.Err()
			}
			return last
		case <-time.After(channelTick):
		}
	}
}

// doReceive listens or looks on the channel for DurationMS and reports the
// values it got (not its own). Having listened is "completed"; whether a
// value arrived is in Excerpt, for the harness to judge. Its active window
// runs from when it really listened (socket bound, folder there, segment
// attached) to when it stopped: none when it never listened.
func doReceive(ctx context.Context, s wire.Step, rep *wire.Report) error {
	ch, err := parseChannel(s.Target)
	if err != nil {
		return err
	}
	f := newFound(s.Payload)
	ctx, cancel := context.WithTimeout(ctx, stepDuration(s))
	defer cancel()
	switch ch.scheme {
	case "tcp", "udp":
		err = receiveNet(ctx, ch, f)
	case "dir":
		err = pollFiles(ctx, ch.rest, f)
	case "unix":
		err = receiveUnix(ctx, ch.rest, s.Payload, f, func(p string) { wrote(rep, p) })
	case "abstract":
		err = receiveAbstract(ctx, ch.rest, s.Payload, f)
	case "shm":
		err = receiveShm(ctx, ch.rest, f)
	case "mq":
		err = receiveMq(ctx, ch.rest, f)
	case "proc":
		err = receiveProc(ctx, ch.rest, f)
	default:
		err = fmt.Errorf("unknown channel scheme %q", ch.scheme)
	}
	if !f.from.IsZero() {
		rep.ActiveFrom, rep.ActiveTo = f.from.UTC(), time.Now().UTC()
	}
	rep.Bytes = len(f.order)
	rep.Excerpt = f.excerpt()
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
