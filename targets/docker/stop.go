package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/client"
)

// defaultStopLimit is the grace between SIGTERM and SIGKILL when the
// profile names none (profile.DefaultStop).
const defaultStopLimit = 5 * time.Second

func (s *Session) stopLimit() time.Duration {
	if s.t.spec.StopLimit > 0 {
		return s.t.spec.StopLimit
	}
	return defaultStopLimit
}

// stopProcesses is the careless stop of stop scope "process": SIGTERM to
// each running exec's process (and its process group when it leads one),
// SIGKILL after the grace. Docker has no API for it, so the exec's host
// pid is signalled: only possible when the daemon runs on this machine.
// Under runsc that pid is `runsc exec`, outside the sandbox, so the
// command itself may run on: more careless still, never less.
func (s *Session) stopProcesses(ctx context.Context) error {
	if !s.local() {
		return errors.New("docker: stop: stop scope process needs the daemon on this machine (it signals exec pids)")
	}
	var pids []int
	for _, id := range s.running() {
		res, err := s.cli.ExecInspect(ctx, id, client.ExecInspectOptions{})
		if err == nil && res.Running && res.PID > 1 {
			pids = append(pids, res.PID)
		}
	}
	signal := func(sig syscall.Signal) {
		for _, pid := range pids {
			if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
				_ = syscall.Kill(-pid, sig)
			}
			_ = syscall.Kill(pid, sig)
		}
	}
	signal(syscall.SIGTERM)
	deadline := time.Now().Add(s.stopLimit())
	for time.Now().Before(deadline) && anyAlive(pids) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	signal(syscall.SIGKILL)
	return nil
}

// local reports whether the daemon's processes are this machine's: the
// lab daemon Gatehouse started.
func (s *Session) local() bool {
	return s.t.daemon != nil && strings.HasPrefix(s.t.host, "unix://")
}

func anyAlive(pids []int) bool {
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil && !zombie(pid) {
			return true
		}
	}
	return false
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) STATE ...: comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z'
}

// inCgroupOf reports whether pid's cgroup names the container: the check
// that a pid read from the daemon is really one of the session's.
func inCgroupOf(pid int, containerID string) error {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return err
	}
	if !strings.Contains(string(b), containerID) {
		return fmt.Errorf("pid %d is not in the container's cgroup (%s)", pid, strings.TrimSpace(capped(string(b))))
	}
	return nil
}
