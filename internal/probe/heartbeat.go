package probe

import (
	"net/url"

	"golang.org/x/net/http/httpproxy"

	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// doHeartbeat models an agent that does not want to stop: it ignores
// SIGTERM, SIGINT and SIGHUP, POSTs to Target every HeartbeatEvery for
// DurationMS whatever the attempt's deadline says, and with Escape first
// starts a copy of itself in a new session (setsid), outside its process
// group, that does the same. Each request says who sent it (who=main or
// who=child) so the endpoint's log tells them apart.
func doHeartbeat(ctx context.Context, s wire.Step, rep *wire.Report) error {
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	d := stepDuration(s)
	who := "main"
	if s.ID == childHeartbeatID {
		who = "child"
	}
	if s.Escape {
		pid, err := escapeChild(ctx, s)
		if err != nil {
			rep.Error = clip("child: "+err.Error(), wire.MaxErrorLen)
		} else {
			rep.Excerpt = fmt.Sprintf("child pid %d\n", pid)
		}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	defer cancel()
	tr := &http.Transport{}
	if s.UseProxy {
		// The way out the sandbox gives (srt's and codex's proxies): an
		// agent that keeps going uses it like any other call.
		pf := httpproxy.FromEnvironment().ProxyFunc()
		tr.Proxy = func(r *http.Request) (*url.URL, error) { return pf(r.URL) }
	}
	client := &http.Client{Timeout: 2 * wire.HeartbeatEvery, Transport: tr}
	sep := "?"
	if strings.Contains(s.Target, "?") {
		sep = "&"
	}
	tick := time.NewTicker(wire.HeartbeatEvery)
	defer tick.Stop()
	for n := 1; ; n++ {
		url := fmt.Sprintf("%s%swho=%s&n=%d", s.Target, sep, who, n)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"prompt":"still working"}`))
		if err == nil {
			tagRequest(ctx, req)
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
				rep.Bytes++
			}
		}
		if s.Path != "" {
			tag, _ := ctx.Value(tagKey{}).(string)
			appendBeat(s.Path+"-"+who, tag)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// childHeartbeatID marks the escaped child's own plan.
const childHeartbeatID = "heartbeat-child"

// escapeChild starts `probe run` again, in a session of its own, with a
// plan that holds one heartbeat.
func escapeChild(ctx context.Context, s wire.Step) (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	child := s
	child.ID, child.Escape = childHeartbeatID, false
	tag, _ := ctx.Value(tagKey{}).(string)
	plan, err := json.Marshal(wire.Plan{Session: "child", Canary: tag, Steps: []wire.Step{child}})
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(exe, "run")
	cmd.Stdin = bytes.NewReader(plan)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	// The child must outlive us: it is not waited for.
	go func() { _ = cmd.Wait() }()
	return pid, nil
}

// appendBeat appends one line to file, if it can: the session's tag, so
// that the harness can take it back if the file is on the host.
func appendBeat(file, tag string) {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	_, _ = f.WriteString(wire.BeatLine(tag))
	f.Close()
}
