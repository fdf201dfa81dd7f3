package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gatehouse-dev/gatehouse/internal/hostenv"
	_ "github.com/gatehouse-dev/gatehouse/internal/mainthread" // keep locked goroutines off the main thread
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"syscall"
	"time"

	"github.com/moby/moby/client"
)

// RunscPath is where scripts/runsc.sh installs gVisor's runtime. When it
// exists, the lab daemon declares it as the runtime "runsc".
const RunscPath = "/usr/local/bin/runsc"

// Daemon is a dockerd that Gatehouse started inside a network namespace of
// its own making, with every folder and socket under one state folder, so a
// container on it (even with --network host) reaches only that namespace.
type Daemon struct {
	stateDir string
	cmd      *exec.Cmd
	exited   chan struct{} // closed when dockerd has exited
	waitErr  error
	logPath  string
	stopped  bool
	ownNetns string   // the namespace we made for it, removed by Stop
	netns    string   // the namespace file it runs in
	runtimes []string // declared in its config, sorted
}

// DaemonOptions configure StartDaemonWith.
type DaemonOptions struct {
	// Netns is the network namespace file dockerd runs in. Empty is refused
	// unless OwnNetns is set: never the machine's own namespace.
	Netns string
	// OwnNetns: make a sealed namespace for the daemon (gh-d<hex>, lo only,
	// no route anywhere), removed by Stop. Containers never use it in the
	// lab: the shim puts them in the harness's namespaces.
	OwnNetns bool
	// StateDir holds every folder and socket; keep it short (containerd
	// puts sockets under it). "" picks /run/ghd-<this pid in hex>, the
	// name ReapStale reads the owner from (one such daemon per process).
	StateDir string
	// Shim is the argv prefix that runs ShimMain (e.g. [gatehouse
	// oci-runtime]); when set the daemon declares gatehouse-runc and, with
	// runsc installed, gatehouse-runsc.
	Shim []string
}

// StartDaemon starts `nsenter --net=netnsPath dockerd` with its data root,
// exec root, pidfile, socket and config file under stateDir (which must be
// short: containerd puts sockets under it), and waits until the socket
// answers. It refuses an empty netnsPath: a daemon in the machine's own
// namespace would let containers reach the real network.
func StartDaemon(ctx context.Context, netnsPath, stateDir string) (*Daemon, error) {
	return StartDaemonWith(ctx, DaemonOptions{Netns: netnsPath, StateDir: stateDir})
}

// StartDaemonWith starts a daemon as StartDaemon does, with options.
func StartDaemonWith(ctx context.Context, o DaemonOptions) (*Daemon, error) {
	if o.Netns == "" && !o.OwnNetns {
		return nil, errors.New("docker: start daemon: refusing to run dockerd without a lab network namespace")
	}
	if o.StateDir == "" {
		o.StateDir = fmt.Sprintf("/run/ghd-%x", os.Getpid())
	}
	d := &Daemon{stateDir: o.StateDir, exited: make(chan struct{}), logPath: filepath.Join(o.StateDir, "dockerd.log")}
	if o.OwnNetns {
		name, err := sealedNetns(ctx)
		if err != nil {
			return nil, fmt.Errorf("docker: start daemon: %w", err)
		}
		d.ownNetns, o.Netns = name, netnsDir+name
	}
	d.netns = o.Netns
	if err := d.start(ctx, o); err != nil {
		_ = d.Stop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("docker: start daemon: %w", err)
	}
	return d, nil
}

func (d *Daemon) start(ctx context.Context, o DaemonOptions) error {
	if _, err := os.Stat(o.Netns); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(o.StateDir, "sessions"), 0o700); err != nil {
		return err
	}
	if d.ownNetns != "" {
		// For ReapStale, should this process die without Stop.
		if err := os.WriteFile(filepath.Join(o.StateDir, "netns"), []byte(d.ownNetns+"\n"), 0o600); err != nil {
			return err
		}
	}
	cfgPath := filepath.Join(o.StateDir, "daemon.json")
	rts, err := writeDaemonConfig(cfgPath, o.StateDir, o.Shim)
	if err != nil {
		return err
	}
	d.runtimes = rts
	logf, err := os.Create(d.logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	// nsenter, not `ip netns exec`: the latter remounts /sys and dockerd then
	// fails with "Devices cgroup isn't mounted" (platform-notes).
	cmd := exec.Command("nsenter", append([]string{"--net=" + o.Netns, "dockerd"}, daemonArgs(o.StateDir, cfgPath)...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = hostenv.Env() // dockerd and every runtime it starts: none of the harness's secrets
	// nsenter execs dockerd in place, so the death signal reaches dockerd if
	// Gatehouse dies without calling Stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	// The death signal follows the OS thread that forked, not the process:
	// fork from a thread locked for dockerd's whole life, or Go may retire
	// that thread and the signal would stop the daemon mid-run.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with dockerd
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		d.waitErr = cmd.Wait()
		close(d.exited)
	}()
	if err := <-started; err != nil {
		return err
	}
	d.cmd = cmd
	// nsenter execs dockerd in place: this pid and start time are the
	// daemon's, which ReapStale checks before it signals a stale pid file.
	if err := recordStart(o.StateDir, cmd.Process.Pid); err != nil {
		return fmt.Errorf("record the daemon's start: %w", err)
	}
	if err := d.waitReady(ctx); err != nil {
		return fmt.Errorf("%w (log: %s)", err, tail(d.logPath, 400))
	}
	return nil
}

// daemonArgs are dockerd's flags. iptables is off: the lab namespace has no
// route out, so NAT is pointless, and Docker's rules (FORWARD policy DROP,
// its own chains) would fight the lab's nftables egress policy. Egress for
// containers is the lab's job, in its own ruleset.
func daemonArgs(stateDir, cfgPath string) []string {
	return []string{
		"--data-root", filepath.Join(stateDir, "d"),
		"--exec-root", filepath.Join(stateDir, "x"),
		"--pidfile", filepath.Join(stateDir, "dockerd.pid"),
		"-H", "unix://" + filepath.Join(stateDir, "docker.sock"),
		"--config-file", cfgPath,
		"--iptables=false", "--ip6tables=false", "--ip-masq=false",
		// A cgroup parent per daemon keeps two lab daemons' containers apart.
		"--cgroup-parent", "/" + cgroupParent(stateDir),
	}
}

// writeDaemonConfig writes the --config-file, which also keeps the machine's
// /etc/docker/daemon.json (mirrors, proxies, runtimes) out of the lab.
func writeDaemonConfig(path, stateDir string, shim []string) ([]string, error) {
	cfg := map[string]any{"registry-mirrors": []string{}}
	rts := map[string]any{}
	real := map[string]string{}
	if p, err := exec.LookPath("runc"); err == nil {
		real["runc"] = p
	}
	if fi, err := os.Stat(RunscPath); err == nil && !fi.IsDir() {
		rts["runsc"] = map[string]any{"path": RunscPath}
		real["runsc"] = RunscPath
	}
	if len(shim) > 0 {
		for name, bin := range real {
			script, err := writeShimScript(stateDir, runtimePrefix+name, bin, shim)
			if err != nil {
				return nil, err
			}
			rts[runtimePrefix+name] = map[string]any{"path": script}
		}
	}
	names := []string{"runc"}
	if len(rts) > 0 {
		cfg["runtimes"] = rts
		for n := range rts {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	return names, os.WriteFile(path, b, 0o600)
}

func cgroupParent(stateDir string) string { return "gatehouse-" + filepath.Base(stateDir) }

// Netns is the namespace file dockerd runs in.
func (d *Daemon) Netns() string { return d.netns }

func (d *Daemon) cgroupParent() string { return cgroupParent(d.stateDir) }

// SessionsDir holds the shim's per-container entries and resolv.conf files.
func (d *Daemon) SessionsDir() string { return filepath.Join(d.stateDir, "sessions") }

// HasRuntime reports whether the daemon declared runtime name.
func (d *Daemon) HasRuntime(name string) bool {
	for _, r := range d.runtimes {
		if r == name {
			return true
		}
	}
	return false
}

// Runtimes lists the runtimes the daemon's config declares.
func (d *Daemon) Runtimes() []string { return append([]string(nil), d.runtimes...) }

// Host is the DOCKER_HOST value for this daemon.
func (d *Daemon) Host() string { return "unix://" + filepath.Join(d.stateDir, "docker.sock") }

// LogPath is dockerd's log, worth attaching to evidence when a start fails.
func (d *Daemon) LogPath() string { return d.logPath }

func (d *Daemon) waitReady(ctx context.Context) error {
	cli, err := client.New(client.WithHost(d.Host()), client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		_, perr := cli.Ping(pctx, client.PingOptions{})
		pcancel()
		if perr == nil {
			return nil
		}
		select {
		case <-d.exited:
			return fmt.Errorf("dockerd exited: %v", d.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("socket did not answer: %w (last: %v)", ctx.Err(), perr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop removes every container on the daemon, stops dockerd (SIGTERM, then
// SIGKILL after 20 s), unmounts what it left under the state folder and
// deletes that folder. Safe to call twice.
func (d *Daemon) Stop(ctx context.Context) error {
	if d.stopped {
		return nil
	}
	d.stopped = true
	var errs []error
	running := d.cmd != nil
	if running {
		select {
		case <-d.exited:
			running = false
		default:
		}
	}
	if running {
		if err := removeAllContainers(ctx, d.Host()); err != nil {
			errs = append(errs, err)
		}
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
			<-d.exited
		}
	}
	if err := removeCgroups(ctx, d.cgroupParent()); err != nil {
		errs = append(errs, err)
	}
	if err := unmountUnder(d.stateDir); err != nil {
		errs = append(errs, err)
	}
	// The state folder names the namespace for ReapStale: it goes last.
	if d.ownNetns != "" {
		if err := deleteNetns(ctx, d.ownNetns); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(d.stateDir); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("docker: stop daemon: %w", err)
	}
	return nil
}

func removeAllContainers(ctx context.Context, host string) error {
	cli, err := client.New(client.WithHost(host), client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true})
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range list.Items {
		_, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// tail returns the last n bytes of a file, for error messages.
func tail(path string, n int64) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if int64(len(b)) > n {
		b = b[int64(len(b))-n:]
	}
	return string(b)
}
