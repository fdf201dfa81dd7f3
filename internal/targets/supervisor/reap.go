package supervisor

import (
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// reap collects every child that ends: commands (their waiters get the
// status) and orphans that were re-parented to us (dropped).
func (s *server) reap() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGCHLD)
	tick := time.NewTicker(time.Second) // a coalesced SIGCHLD must not strand a waiter
	defer tick.Stop()
	for {
		select {
		case <-ch:
		case <-tick.C:
		}
		s.reapAll()
	}
}

func (s *server) reapAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		if done, ok := s.running[pid]; ok {
			delete(s.running, pid)
			done <- ws
		}
	}
}

// mergeEnv overlays extra on the supervisor's own environment (which is
// the sandbox's, as the runtime set it).
func mergeEnv(base []string, extra map[string]string) []string {
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, over := extra[k]; !over {
			out = append(out, kv)
		}
	}
	for k, v := range extra {
		out = append(out, k+"="+v)
	}
	return out
}

// lookPath finds a command the way a shell would, with the command's own PATH.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("command not found in PATH " + path)
}

// proxyVars are the variables that point programs at a proxy; any case.
var proxyVars = map[string]bool{"HTTP_PROXY": true, "HTTPS_PROXY": true, "ALL_PROXY": true, "NO_PROXY": true, "FTP_PROXY": true}

func isProxyVar(k string) bool { return proxyVars[strings.ToUpper(k)] }

// dropProxy applies the wrapper rule: when the init's own environment (what
// the wrapper set, e.g. srt's or Codex's proxy with its per-run token) names
// any proxy variable, the wrapper's proxy setup is taken whole, and every
// proxy variable of the request (the harness's per-session default) is
// dropped. With none in the init's environment, the request's apply.
func dropProxy(base []string, extra map[string]string) map[string]string {
	own := false
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if isProxyVar(k) {
			own = true
			break
		}
	}
	if !own {
		return extra
	}
	out := make(map[string]string, len(extra))
	for k, v := range extra {
		if !isProxyVar(k) {
			out[k] = v
		}
	}
	return out
}
