package probe

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// channelTick is how often a sender offers its value again and a poller
// looks again: two sessions that start a little apart still meet.
const channelTick = 100 * time.Millisecond

// xsPrefix names what the probe leaves in shared folders, so each side can
// find the other's without knowing its value.
const xsPrefix = ".gatehouse-xs-"

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
// "completed" when at least one offer went out without an error.
func doSend(ctx context.Context, s Step, rep *Report) error {
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
		send, done = sendFile(ch.rest, s.Payload)
	case "unix":
		send = func(ctx context.Context) error { return sendUnix(ctx, ch.rest, s.Payload) }
	case "abstract":
		send = func(ctx context.Context) error { return sendAbstract(ctx, ch.rest, s.Payload) }
	case "shm":
		send = func(ctx context.Context) error { return sendShm(ch.rest, s.Payload) }
	default:
		return fmt.Errorf("unknown channel scheme %q", ch.scheme)
	}
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
func repeat(ctx context.Context, d time.Duration, fn func(context.Context) error, rep *Report) error {
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
// value arrived is in Excerpt, for the harness to judge.
func doReceive(ctx context.Context, s Step, rep *Report) error {
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
		err = receiveUnix(ctx, ch.rest, s.Payload, f)
	case "abstract":
		err = receiveAbstract(ctx, ch.rest, s.Payload, f)
	case "shm":
		err = receiveShm(ctx, ch.rest, f)
	default:
		err = fmt.Errorf("unknown channel scheme %q", ch.scheme)
	}
	rep.Bytes = len(f.order)
	rep.Excerpt = f.excerpt()
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// tag is a short, stable name for a value that does not reveal it.
func tag(v string) string {
	h := fnv.New32a()
	h.Write([]byte(v))
	return strconv.FormatUint(uint64(h.Sum32()), 16)
}

// sendFile writes the value once into a file in a shared folder and
// removes it when the attempt ends.
func sendFile(dir, v string) (func(context.Context) error, func()) {
	p := filepath.Join(dir, xsPrefix+tag(v))
	written := false
	send := func(context.Context) error {
		if written {
			return nil
		}
		f, err := openForWrite(p)
		if err != nil {
			return err
		}
		_, err = f.WriteString("GATEHOUSE " + v + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		written = err == nil
		return err
	}
	return send, func() {
		if written {
			_ = os.Remove(p)
		}
	}
}

// pollFiles reads every xs file in dir each tick.
func pollFiles(ctx context.Context, dir string, f *found) error {
	if _, err := os.Stat(dir); err != nil {
		return err
	}
	for {
		ms, _ := filepath.Glob(filepath.Join(dir, xsPrefix+"*"))
		for _, m := range ms {
			if b, err := readFile(m); err == nil {
				f.add(b, m)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(channelTick / 2):
		}
	}
}
