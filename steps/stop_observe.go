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
	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
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

// writes lists files under the folders that were modified after since:
// writes a session made after its stop. The folders are the session's
// own to write, so they are searched as hostile input (no link followed,
// no other file system entered), bounded in entries and by ctx: a huge
// tree is cut, and the cut said.
func writes(ctx context.Context, folders []string, since time.Time) []string {
	const maxFiles = 5000
	var out []string
	n, cut := 0, false
	for _, dir := range folders {
		// The folder as the runtime bound it (a link on the host on the
		// way to it, /var/run's, is the host's); below it, nothing is
		// followed.
		real, err := filepath.EvalSymlinks(dir)
		if err != nil || n >= maxFiles {
			continue
		}
		d, err := untrusted.OpenDir(real)
		if err != nil {
			continue
		}
		err = d.Walk(ctx, untrusted.Limits{Entries: maxFiles - n}, func(_ *untrusted.Dir, e untrusted.Entry) error {
			if listedHook != nil {
				listedHook(e.Path)
			}
			n++
			if !e.Mode.IsDir() && e.ModTime.After(since) {
				out = append(out, filepath.Join(dir, filepath.FromSlash(e.Path)))
			}
			return nil
		})
		d.Close()
		cut = cut || errors.Is(err, untrusted.ErrTooLarge) || n >= maxFiles
	}
	if cut {
		out = append(out, fmt.Sprintf("(search cut after %d entries)", maxFiles))
	}
	return out
}

// writableBinds are the host folders the runtime binds writable into the
// session, from what Inspect read back: bwrap's --bind arguments, docker's
// read-write bind mounts. The team's own folders: writes there after a stop
// are the session still acting; the folders themselves outliving it is not.
func writableBinds(cfg targets.Config) []string {
	var out []string
	for i := 0; i+2 < len(cfg.Argv); i++ {
		if cfg.Argv[i] == "--bind" || cfg.Argv[i] == "--bind-try" {
			out = append(out, cfg.Argv[i+1])
		}
	}
	for _, m := range cfg.Mounts {
		// docker: "bind SRC -> DST (rw)"
		if rest, ok := strings.CutPrefix(m, "bind "); ok && strings.HasSuffix(m, "(rw)") {
			if src, _, ok := strings.Cut(rest, " -> "); ok {
				out = append(out, src)
			}
		}
	}
	var dirs []string
	for _, p := range out {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			dirs = append(dirs, p)
		}
	}
	return dirs
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
