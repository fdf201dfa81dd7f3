package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/targets"
)

var _ targets.ProcessLister = (*Session)(nil)

// Processes lists, from the host, every process in the container's cgroup:
// the kernel's word for what still runs of the session, including a
// process that made a network namespace of its own. Only for the lab
// daemon, whose processes are this machine's. Once the container is
// removed the list is empty.
func (s *Session) Processes(ctx context.Context) ([]int, error) {
	if !s.local() {
		return nil, fmt.Errorf("docker: processes: the daemon is not on this machine: %w", targets.ErrUnsupported)
	}
	id := s.ID()
	if id == "" {
		return nil, errors.New("docker: processes: no container id")
	}
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, d := range dirs {
		if err := ctx.Err(); err != nil {
			return pids, err
		}
		b, err := os.ReadFile(d + "/cgroup")
		if err != nil || !strings.Contains(string(b), id) {
			continue
		}
		// A zombie runs nothing: it is only waiting for its parent.
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil && !zombie(pid) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
