package docker

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
)

// ReapStale removes what lab daemons of processes that no longer exist
// left behind (a crash, SIGKILL): their dockerd if it still runs, mounts,
// cgroups, state folder /run/ghd-<pid> and namespace. It returns the state
// folders it removed. Daemons of live processes are left alone.
func ReapStale(ctx context.Context) ([]string, error) {
	dirs, err := filepath.Glob("/run/ghd-*")
	if err != nil {
		return nil, err
	}
	var done []string
	var errs []error
	for _, dir := range dirs {
		pid, err := strconv.ParseInt(strings.TrimPrefix(filepath.Base(dir), "ghd-"), 16, 32)
		if err != nil || pid <= 0 || syscall.Kill(int(pid), 0) == nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(dir, "dockerd.pid")); err == nil {
			if dp, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && dp > 1 {
				_ = syscall.Kill(dp, syscall.SIGKILL)
				time.Sleep(200 * time.Millisecond)
			}
		}
		e := errors.Join(removeCgroups(cgroupParent(dir)), unmountUnder(dir))
		if b, err := os.ReadFile(filepath.Join(dir, "netns")); err == nil {
			e = errors.Join(e, deleteNetns(ctx, strings.TrimSpace(string(b))))
		}
		e = errors.Join(e, os.RemoveAll(dir))
		if e != nil {
			errs = append(errs, fmt.Errorf("%s: %w", dir, e))
			continue
		}
		done = append(done, dir)
	}
	if err := errors.Join(errs...); err != nil {
		return done, fmt.Errorf("docker: reap stale daemons: %w", err)
	}
	return done, nil
}
