package exec

import (
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/hostproc"
)

// Every signal of the teardown goes through a pin (internal/hostproc): a
// pid read a moment ago whose process exited and was reaped may already
// be another's, anywhere on the host.

// killListed kills each listed process not in keep once it is pinned and
// seen in this cgroup (or one below): a listed pid whose number went to
// another process is never signalled. It returns the pids killed.
func (c *cgroup) killListed(pids []int, keep map[int]bool) []int {
	if c == nil {
		return nil
	}
	member := hostproc.InCgroup(strings.TrimPrefix(c.dir, cgroup2Mount()))
	var killed []int
	for _, pid := range pids {
		if !keep[pid] && hostproc.SignalIf(pid, unix.SIGKILL, member) == nil {
			killed = append(killed, pid)
		}
	}
	return killed
}

// killChain kills chain[i] (see chain): the init and the wrapper through
// their pins, those between once seen in the session's cgroup.
func (s *session) killChain(chain []int, i int) {
	switch {
	case i == len(chain)-1 && s.init != nil && s.init.PID == chain[i]:
		_ = s.init.Signal(unix.SIGKILL)
	case i == 0 && s.leader != nil && s.leader.PID == chain[i]:
		_ = s.leader.Signal(unix.SIGKILL)
	default:
		s.cg.killListed(chain[i:i+1], nil)
	}
}
