package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
}

// StartDaemon starts `nsenter --net=netnsPath dockerd` with its data root,
// exec root, pidfile, socket and config file under stateDir (which must be
// short: containerd puts sockets under it), and waits until the socket
// answers. It refuses an empty netnsPath: a daemon in the machine's own
// namespace would let containers reach the real network.
func StartDaemon(ctx context.Context, netnsPath, stateDir string) (*Daemon, error) {
	if netnsPath == "" {
		return nil, errors.New("docker: start daemon: refusing to run dockerd without a lab network namespace")
	}
	if _, err := os.Stat(netnsPath); err != nil {
		return nil, fmt.Errorf("docker: start daemon: %w", err)
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("docker: start daemon: %w", err)
	}
	cfgPath := filepath.Join(stateDir, "daemon.json")
	if err := writeDaemonConfig(cfgPath); err != nil {
		return nil, fmt.Errorf("docker: start daemon: %w", err)
	}
	d := &Daemon{stateDir: stateDir, exited: make(chan struct{}), logPath: filepath.Join(stateDir, "dockerd.log")}
	logf, err := os.Create(d.logPath)
	if err != nil {
		return nil, fmt.Errorf("docker: start daemon: %w", err)
	}
	defer logf.Close()
	// nsenter, not `ip netns exec`: the latter remounts /sys and dockerd then
	// fails with "Devices cgroup isn't mounted" (platform-notes).
	d.cmd = exec.Command("nsenter", append([]string{"--net=" + netnsPath, "dockerd"}, daemonArgs(stateDir, cfgPath)...)...)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	// nsenter execs dockerd in place, so the death signal reaches dockerd if
	// Gatehouse dies without calling Stop.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("docker: start daemon: %w", err)
	}
	go func() { d.waitErr = d.cmd.Wait(); close(d.exited) }()
	if err := d.waitReady(ctx); err != nil {
		_ = d.Stop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("docker: start daemon: %w (log: %s)", err, tail(d.logPath, 400))
	}
	return d, nil
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
func writeDaemonConfig(path string) error {
	cfg := map[string]any{"registry-mirrors": []string{}}
	if fi, err := os.Stat(RunscPath); err == nil && !fi.IsDir() {
		cfg["runtimes"] = map[string]any{"runsc": map[string]any{"path": RunscPath}}
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

func cgroupParent(stateDir string) string { return "gatehouse-" + filepath.Base(stateDir) }

func (d *Daemon) cgroupParent() string { return cgroupParent(d.stateDir) }

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
	select {
	case <-d.exited:
	default:
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
	if err := removeCgroups(d.cgroupParent()); err != nil {
		errs = append(errs, err)
	}
	if err := unmountUnder(d.stateDir); err != nil {
		errs = append(errs, err)
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
