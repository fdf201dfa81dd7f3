package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/hostproc"
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
	procs := pinExecs(s.running(), func(id string) (int, bool) {
		res, err := s.cli.ExecInspect(ctx, id, client.ExecInspectOptions{})
		return res.PID, err == nil && res.Running
	})
	defer func() {
		for _, p := range procs {
			p.Close()
		}
	}()
	signalExecs(procs, unix.SIGTERM)
	deadline := time.Now().Add(s.stopLimit())
	for time.Now().Before(deadline) && anyAlive(procs) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	signalExecs(procs, unix.SIGKILL)
	return nil
}

// signalExecs signals each pinned exec process, and the group it leads.
func signalExecs(procs []execProc, sig unix.Signal) {
	for _, p := range procs {
		if p.leads {
			_ = p.SignalGroup(sig)
		}
		_ = p.Signal(sig)
	}
}

// execProc is a running exec's host process, pinned.
type execProc struct {
	*hostproc.Proc
	leads bool // it leads its process group
}

// pinExecs pins each running exec's host process: the daemon names its
// pid, the pid is pinned, and the daemon is asked again: only a pid it
// still names as running, pinned and alive across that answer, is the
// exec's. One whose exec ended and whose number went to another process
// meanwhile is never pinned, so never signalled (the grace before the
// SIGKILL is seconds long: signals go through the pins).
func pinExecs(ids []string, inspect func(id string) (pid int, running bool)) []execProc {
	var out []execProc
	for _, id := range ids {
		pid, running := inspect(id)
		if !running || pid <= 1 {
			continue
		}
		p, err := hostproc.Pin(pid)
		if err != nil {
			continue
		}
		again, running := inspect(id)
		leads := false
		err = p.Read(func(string) error {
			pgid, err := unix.Getpgid(pid)
			leads = err == nil && pgid == pid
			return err
		})
		if !running || again != pid || err != nil {
			p.Close()
			continue
		}
		out = append(out, execProc{p, leads})
	}
	return out
}

// local reports whether the daemon's processes are this machine's: the
// lab daemon Gatehouse started.
func (s *Session) local() bool {
	return s.t.daemon != nil && strings.HasPrefix(s.t.host, "unix://")
}

func anyAlive(procs []execProc) bool {
	for _, p := range procs {
		if p.Alive() {
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
