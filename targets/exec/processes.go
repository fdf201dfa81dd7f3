package exec

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/targets"
)

var _ targets.ProcessLister = (*session)(nil)

// Processes lists, from the host, every process of the session: the
// cgroup.procs of its cgroup and of every child (one per Exec). A process
// that made its own network or PID namespace is still in the cgroup, and
// cannot leave it without rights over the cgroup tree. Once the cgroup is
// gone (after Stop or Reap killed it empty) the list is empty.
func (s *session) Processes(ctx context.Context) ([]int, error) {
	if s.cg == nil {
		return nil, fmt.Errorf("exec: processes: no cgroup v2: %w", targets.ErrUnsupported)
	}
	var pids []int
	err := filepath.WalkDir(s.cg.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked: it had nothing left
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	if err != nil {
		return pids, fmt.Errorf("exec: processes: %w", err)
	}
	return pids, nil
}
