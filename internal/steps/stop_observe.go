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

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// nsIdent identifies a network namespace by device and inode: read once,
// before the stop, so a stop that removes the namespace's name (or a
// nested namespace) cannot make its processes look gone.
type nsIdent struct{ dev, ino uint64 }

func netnsIdent(path string) (nsIdent, error) {
	var st syscall.Stat_t
	if path == "" {
		return nsIdent{}, errors.New("no namespace path")
	}
	if err := syscall.Stat(path, &st); err != nil {
		return nsIdent{}, err
	}
	return nsIdent{uint64(st.Dev), st.Ino}, nil
}

// pidsIn lists the processes in the namespace, as `ip netns pids` does,
// but by identity, not by name.
func (id nsIdent) pidsIn() []string {
	links, _ := filepath.Glob("/proc/[0-9]*/ns/net")
	self := strconv.Itoa(os.Getpid())
	var pids []string
	for _, l := range links {
		var st syscall.Stat_t
		if syscall.Stat(l, &st) != nil {
			continue
		}
		pid := filepath.Base(filepath.Dir(filepath.Dir(l)))
		if uint64(st.Dev) == id.dev && st.Ino == id.ino && pid != self {
			pids = append(pids, pid)
		}
	}
	return pids
}

// watch is how one session's remains are looked for from outside: its own
// network namespace (by identity), unless it shares one with others, and
// the target's own list of the session's processes.
type watch struct {
	ns       nsIdent
	nsErr    error // the namespace could not be identified: its processes are unknown
	nsShared bool  // the namespace is not the session's own (host networking)
}

func newWatch(netns string, shared bool) watch {
	w := watch{nsShared: shared}
	if !shared {
		w.ns, w.nsErr = netnsIdent(netns)
	}
	return w
}

// remains is what is left of a session, seen from outside.
type remains struct {
	nsKnown   bool // the session namespace was scanned
	inNetns   int  // processes in it
	nsWhy     string
	inSession []int // processes the target lists for it (bwrap, docker: its cgroup)
	listErr   error // why the target could not list them; nil if it did
}

// left looks for what is left of a session.
func (w watch) left(ctx context.Context, s *scenario) remains {
	var r remains
	switch {
	case w.nsShared:
		r.nsWhy = "its network namespace is shared with other sessions, so its processes there cannot be told apart"
	case w.nsErr != nil:
		r.nsWhy = "its network namespace could not be identified: " + w.nsErr.Error()
	default:
		r.nsKnown, r.inNetns = true, len(w.ns.pidsIn())
	}
	if l, ok := s.sess.(targets.ProcessLister); ok {
		r.inSession, r.listErr = l.Processes(ctx)
	} else {
		r.listErr = targets.ErrUnsupported
	}
	return r
}

// known reports whether the view is complete enough to call a session
// gone: the target's own list (which sees nested namespaces too), or at
// least a scan of the session's own namespace.
func (r remains) known() bool { return r.listErr == nil || r.nsKnown }

func (r remains) none() bool {
	return r.known() && r.inNetns == 0 && len(r.inSession) == 0
}

func (r remains) String() string {
	var parts []string
	if r.nsKnown {
		msg := fmt.Sprintf("%d process(es) still in the session's network namespace", r.inNetns)
		if r.inNetns > 0 {
			msg += ", egress not cut"
		}
		parts = append(parts, msg)
	} else {
		parts = append(parts, r.nsWhy)
	}
	switch {
	case r.listErr == nil:
		parts = append(parts, fmt.Sprintf("%d still in the session (listed by the target: %v)", len(r.inSession), r.inSession))
	case !errors.Is(r.listErr, targets.ErrUnsupported):
		parts = append(parts, "the session's own processes could not be listed: "+r.listErr.Error())
	}
	return strings.Join(parts, "; ")
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
