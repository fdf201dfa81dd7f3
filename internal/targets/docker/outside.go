package docker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/client"

	"github.com/gatehouse-dev/gatehouse/internal/hostproc"
)

// nsKinds are the namespaces read back from outside.
var nsKinds = []string{"pid", "net", "mnt", "ipc", "uts", "user", "cgroup"}

// outsideFacts reads the session's namespaces from the host, the kernel's
// word rather than the probe's: /proc/PID/ns/* of processes the daemon
// names, checked to sit in the container's cgroup, with each one's role,
// pid and command line beside ("outside.role", "outside.pid",
// "outside.cmdline"). Under runc the main one is an exec'd process (what
// the agent's commands are: exec joins the container's namespaces) as
// "outside.ns.*", and the container's init as "outside.init.ns.*". Under
// runsc no agent process exists on the host: the processes compared are
// runsc's own, the sentry first (gvisorFacts). Failures go to
// "outside.ns.error" or "outside.NAME.error": host-access is then
// INCONCLUSIVE, never PASS.
func (s *Session) outsideFacts(ctx context.Context, runtime string, initPID int, f map[string]string) {
	if !s.local() {
		f["outside.ns.error"] = "the daemon is not one Gatehouse runs on this machine: its processes cannot be read"
		return
	}
	id := s.ID()
	engineFacts(initPID, id, f)
	// By the runtime read back, or by what the container's pid is: a runsc
	// sandbox registered under another name is still judged as one.
	if runtime == "runsc" || runscRole(cmdline(initPID), "boot", id) {
		gvisorFacts(initPID, id, f)
		return
	}
	if initPID > 0 {
		if p, err := pinIn(initPID, id); err == nil {
			argv, _ := p.Cmdline()
			describe(f, "outside.init.", "container init", initPID, argv)
			readPinned(p, "outside.init.ns.", f)
			p.Close()
		}
	}
	p, stop, err := s.holdExec(ctx)
	defer stop()
	if err != nil {
		f["outside.ns.error"] = err.Error()
		return
	}
	argv, _ := p.Cmdline()
	describe(f, "outside.", "container process (an exec, as the agent's commands run)", p.PID, argv)
	if n := readPinned(p, "outside.ns.", f); n == 0 {
		f["outside.ns.error"] = fmt.Sprintf("could not read /proc/%d/ns of the exec (pid %d, start %d): it exited or was replaced", p.PID, p.PID, p.Start)
	}
	hostUserFacts(p, "the container process (an exec as the path's user)", f)
}

// hostUserFacts records who a pinned process is on the host, as the
// kernel says: "outside.uid", "outside.gid", the id maps, and host_user.
func hostUserFacts(p *hostproc.Proc, who string, f map[string]string) {
	c, err := p.Creds()
	if err != nil {
		f["host_user"] = "unknown: " + err.Error()
		return
	}
	f["outside.uid"] = strconv.Itoa(c.HostUID())
	f["outside.gid"] = strconv.Itoa(c.HostGID())
	f["outside.uid_map"] = c.UIDMap
	f["outside.gid_map"] = c.GIDMap
	what := fmt.Sprintf("host uid %d", c.HostUID())
	if c.HostUID() == 0 {
		what = "host root (uid 0)"
	}
	where := "in the host's user namespace"
	if c.UIDMap != "0 0 4294967295" {
		where = "in a user namespace of its own (uid map " + c.UIDMap + ")"
	}
	f["host_user"] = fmt.Sprintf("%s: %s, %s", what, who, where)
}

// pinIn pins pid and checks, through the pin, that it sits in the
// container's cgroup: a pid the daemon named a moment ago may have exited
// since, and its number gone to any process.
func pinIn(pid int, id string) (*hostproc.Proc, error) {
	p, err := hostproc.Pin(pid)
	if err != nil {
		return nil, err
	}
	if err := p.Read(func(string) error { return inCgroupOf(pid, id) }); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// readPinned reads a pinned process's namespaces into f under prefix; the
// number read (0 when the process is gone).
func readPinned(p *hostproc.Proc, prefix string, f map[string]string) int {
	ns, err := p.Namespaces(nsKinds)
	if err != nil {
		return 0
	}
	for k, v := range ns {
		f[prefix+k] = v
	}
	return len(ns)
}

// engineFacts records the namespaces of the process that runs the runtime
// for this container (containerd's shim, the parent of the container's
// pid) as "engine.ns.*": the host side as the runtime sees it. In the lab
// its net is the daemon's own sealed namespace, which in the field is the
// machine's network; a runsc gofer or sentry told to use "the host's"
// network lands there. Nothing is recorded when that parent sits in the
// container's cgroup: then it is the sandbox's, not the host's.
func engineFacts(initPID int, id string, f map[string]string) {
	pp := parentOf(initPID)
	if initPID <= 0 || pp <= 1 || inCgroupOf(pp, id) == nil {
		return
	}
	describe(f, "engine.", "container engine (the runtime's caller)", pp, cmdline(pp))
	readNS(pp, "engine.ns.", f)
}

// readNS reads pid's namespaces through a pin, so that what it reads is
// one process's, never half another's that took the pid meanwhile.
func readNS(pid int, prefix string, f map[string]string) int {
	p, err := hostproc.Pin(pid)
	if err != nil {
		return 0
	}
	defer p.Close()
	return readPinned(p, prefix, f)
}

// holdExec starts a sleeping exec as the session's path's user, and
// returns it pinned once it is checked (through the pin) to be the sleep,
// in the container's cgroup; stop kills it and releases the pin.
func (s *Session) holdExec(ctx context.Context) (*hostproc.Proc, func(), error) {
	nop := func() {}
	opts := client.ExecCreateOptions{Cmd: []string{s.applet("sleep"), "30"}, Env: []string{execMark + "=" + randHex(8)}}
	if s.path == "assume-breach" {
		opts.User = "0:0"
	}
	created, err := s.cli.ExecCreate(ctx, s.ID(), opts)
	if err != nil {
		return nil, nop, fmt.Errorf("exec for namespaces: %w", err)
	}
	if _, err := s.cli.ExecStart(ctx, created.ID, client.ExecStartOptions{Detach: true}); err != nil {
		return nil, nop, fmt.Errorf("exec for namespaces: %w", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := s.cli.ExecInspect(ctx, created.ID, client.ExecInspectOptions{})
		if err != nil {
			return nil, nop, fmt.Errorf("exec for namespaces: %w", err)
		}
		// Running is reported while the pid is still `runc init`, joining
		// the container's namespaces one by one: read them only once the
		// exec has become the command itself.
		if res.Running && res.PID > 1 {
			if p, err := pinIn(res.PID, s.ID()); err == nil {
				if argv, err := p.Cmdline(); err == nil && strings.Contains(strings.Join(argv, " "), "sleep") {
					return p, func() { _ = p.Signal(syscall.SIGKILL); p.Close() }, nil
				}
				p.Close()
			}
		}
		if !res.Running && res.ExitCode != 0 || time.Now().After(deadline) {
			return nil, nop, errors.New("the exec for namespaces never ran")
		}
		select {
		case <-ctx.Done():
			return nil, nop, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// applet is busybox under one of the names it answers to (sleep, uname),
// for the harness's own commands in a session. Executed as "busybox" it
// is a shell to a monitor (the builtin rule exec-of-a-shell): the
// harness's own look inside would then be detected as the session's
// shell, and answered by --respond before the probe's first attempt.
func (s *Session) applet(name string) string {
	if s.t.spec.Image != "" {
		return toolsDir + "/bin/" + name
	}
	return "/bin/" + name // a link to busybox in the base image
}
