package steps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gatehouse/evidence"
	"gatehouse/targets"
)

// netnsPids lists the processes in the network namespace at path, as
// `ip netns pids` does; ok is false when the namespace cannot be read.
func netnsPids(path string) (pids []string, ok bool) {
	var want syscall.Stat_t
	if path == "" || syscall.Stat(path, &want) != nil {
		return nil, false
	}
	links, _ := filepath.Glob("/proc/[0-9]*/ns/net")
	self := os.Getpid()
	for _, l := range links {
		var st syscall.Stat_t
		if syscall.Stat(l, &st) != nil {
			continue
		}
		pid := filepath.Base(filepath.Dir(filepath.Dir(l)))
		if st.Dev == want.Dev && st.Ino == want.Ino && pid != strconv.Itoa(self) {
			pids = append(pids, pid)
		}
	}
	return pids, true
}

// writableBinds are the host folders a session's runtime binds writable
// (from the argv Inspect read back), except the harness's own places: the
// target's storage for the session, which its stop must remove.
func writableBinds(cfg targets.Config, places string) []string {
	var out []string
	for i := 0; i+2 < len(cfg.Argv); i++ {
		if cfg.Argv[i] != "--bind" && cfg.Argv[i] != "--bind-try" {
			continue
		}
		src := cfg.Argv[i+1]
		if places != "" && strings.HasPrefix(src, places+string(filepath.Separator)) || src == places {
			continue
		}
		out = append(out, src)
	}
	return out
}

// heartbeats returns the session's heartbeat hits: requests to the
// inference endpoint carrying its heartbeat tag.
func heartbeats(hits []evidence.Hit, session, tag string) []evidence.Hit {
	var out []evidence.Hit
	for _, h := range hits {
		if h.Session == session && h.Endpoint == "inference" && strings.Contains(h.Summary, "hb="+tag) {
			out = append(out, h)
		}
	}
	return out
}

func beatFrom(hs []evidence.Hit, who string, before time.Time) bool {
	for _, h := range hs {
		if strings.Contains(h.Summary, "who="+who) && h.Time.Before(before) {
			return true
		}
	}
	return false
}

// remains is what is left of a session, seen from outside.
type remains struct {
	inNetns   int   // processes in its network namespace (as `ip netns pids`)
	inSession []int // processes the target lists for it (bwrap: its cgroup)
	listErr   error // why the target could not list them; nil if it did
}

// left looks for what is left of a session: processes in its network
// namespace and, when the target can list them, every process of the
// session, which also catches one that made a network namespace of its own.
func left(ctx context.Context, s *scenario, netns string) remains {
	var r remains
	pids, _ := netnsPids(netns)
	r.inNetns = len(pids)
	if l, ok := s.sess.(targets.ProcessLister); ok {
		r.inSession, r.listErr = l.Processes(ctx)
	} else {
		r.listErr = targets.ErrUnsupported
	}
	return r
}

func (r remains) none() bool { return r.inNetns == 0 && len(r.inSession) == 0 }

func (r remains) String() string {
	msg := fmt.Sprintf("%d process(es) still in the session's network namespace", r.inNetns)
	if r.inNetns > 0 {
		msg += ", egress not cut"
	}
	switch {
	case r.listErr == nil:
		msg += fmt.Sprintf("; %d still in the session (listed by the target: %v)", len(r.inSession), r.inSession)
	case !errors.Is(r.listErr, targets.ErrUnsupported):
		msg += "; the session's own processes could not be listed: " + r.listErr.Error()
	}
	return msg
}
