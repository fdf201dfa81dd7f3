package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// Exec runs one command in the sandbox and waits for it. A non-zero exit is
// data. ctx cancellation hangs up, which makes the supervisor kill the
// command's process group; Exec then returns ctx's error.
func (c *Client) Exec(ctx context.Context, cmd targets.Command) (targets.Result, error) {
	res := targets.Result{ExitCode: -1}
	start := time.Now()
	p, err := newPipes(cmd)
	defer p.closeChild()
	if err != nil {
		p.finish(0)
		return res, fmt.Errorf("supervisor: pipes: %w", err)
	}
	conn, err := c.call(ctx, Request{Op: OpExec, Args: cmd.Args, Env: cmd.Env, Dir: cmd.Dir}, p.child)
	p.closeChild()
	if err != nil {
		p.finish(0)
		return res, err
	}
	defer conn.Close()
	if p.stdinW != nil {
		go func() {
			_, _ = io.Copy(p.stdinW, cmd.Stdin)
			p.stdinW.Close()
		}()
	}
	wait := c.WaitDelay
	if wait <= 0 {
		wait = 5 * time.Second
	}
	rs := replies(conn)
	var cancelled error
	for {
		select {
		case r, ok := <-rs:
			if !ok {
				p.finish(wait)
				res.Duration = time.Since(start)
				if cancelled != nil {
					return res, cancelled
				}
				return res, fmt.Errorf("supervisor: %s: %w before it finished", cmd.Args[0], ErrGone)
			}
			if !r.Exited {
				continue // Started
			}
			p.finish(wait)
			res.ExitCode, res.Duration = r.Code, time.Since(start)
			if cancelled != nil {
				return res, cancelled
			}
			return res, nil
		case <-c.Gone:
			p.finish(0)
			res.Duration = time.Since(start)
			return res, fmt.Errorf("supervisor: %s: %w", cmd.Args[0], ErrGone)
		case <-ctx.Done():
			if cancelled == nil {
				cancelled = ctx.Err()
				// Hang up our side only: the supervisor kills the group
				// and still sends the exit, which we wait for.
				_ = conn.CloseWrite()
				go func() {
					time.Sleep(10 * time.Second)
					conn.Close()
				}()
			}
			ctx = context.Background() // wait for the exit, not again for ctx
		}
	}
}

func decodeReply(b []byte, r *Reply) error {
	return json.Unmarshal(b, r)
}
