package docker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/gatehouse-dev/gatehouse/internal/targets/egress"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// toolsDir holds what Gatehouse copies in: the probe, and busybox for
// images that have no sleep of their own.
const toolsDir = "/gatehouse"

// workDir is the folder every exec of a session may write (sticky, 1777).
const workDir = toolsDir + "/work"

// Start creates a container that only sleeps, binds or copies its files, records
// the shim entry (which namespace it joins), applies the egress ruleset in
// that namespace and starts it; commands run in it through Exec. Nothing
// is pulled: the image must already be on the daemon.
func (t *Target) Start(ctx context.Context, spec targets.Spec) (targets.Session, error) {
	if !spec.Path.Valid() {
		return nil, fmt.Errorf("docker: start: unknown path %q", spec.Path)
	}
	if err := t.ensureDaemon(ctx); err != nil {
		return nil, fmt.Errorf("docker: start: %w", err)
	}
	img, err := t.image(ctx)
	if err != nil {
		return nil, fmt.Errorf("docker: start: %w", err)
	}
	plan, err := t.planNetwork(spec)
	if err != nil {
		return nil, fmt.Errorf("docker: start: %w", err)
	}
	if err := t.stageFiles(spec, plan); err != nil {
		plan.cleanup()
		return nil, fmt.Errorf("docker: start: %w", err)
	}
	cfg, hc, err := t.request(spec, img, plan)
	if err != nil {
		plan.cleanup()
		return nil, fmt.Errorf("docker: start: %w", err)
	}
	pins, err := pinPlaces(spec, hc.Mounts)
	if err != nil {
		plan.cleanup()
		return nil, fmt.Errorf("docker: start: %w", err)
	}
	defer closePlaces(pins)
	if t.pinned != nil {
		t.pinned()
	}
	cli, err := t.client()
	if err != nil {
		plan.cleanup()
		return nil, fmt.Errorf("docker: start: %w", err)
	}
	// Created, not started: the shim entry and egress ruleset must be in
	// place first, and files not bound (stageFiles) are copied in (our
	// CopyIn, which also works on a read-only root). One API call, on the
	// target's client: testcontainers-go's create also listed networks,
	// inspected the image and made a client (a version ping) every time.
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: hc, Name: containerName(spec.Name)})
	if err != nil {
		plan.cleanup()
		return nil, fmt.Errorf("docker: start: create: %w", err)
	}
	s := &Session{t: t, id: created.ID, cli: cli, path: spec.Path, net: plan}
	if err := s.begin(ctx, spec, pins); err != nil {
		// The harness's own teardown, whatever the stop scope: no session
		// is returned, so nobody else could remove the container.
		_ = s.teardown(ctx)
		return nil, fmt.Errorf("docker: start: %w", err)
	}
	return s, nil
}

// begin does what must happen between create and start.
func (s *Session) begin(ctx context.Context, spec targets.Spec, pins []placeMount) error {
	if err := s.placeFiles(ctx, spec); err != nil {
		return err
	}
	n := s.net
	if n.shimmed {
		n.entryFile = entryPath(s.t.daemon.SessionsDir(), s.ID())
		e := sessionEntry{Netns: n.netns, Flags: s.t.spec.RuntimeFlags, Userns: s.t.spec.Userns == "private"}
		if s.path == targets.PathBreach && s.t.spec.BreachCaps != nil {
			e.SetRootCaps, e.RootCaps = true, ociCaps(s.t.spec.BreachCaps)
		}
		if err := writeEntry(s.t.daemon.SessionsDir(), s.ID(), e); err != nil {
			return fmt.Errorf("shim entry: %w", err)
		}
	}
	if s.t.spec.Userns == "private" {
		if err := s.openPaths(ctx, spec); err != nil {
			return fmt.Errorf("userns: %w", err)
		}
	}
	if n.egress {
		// Before start: gVisor's netstack copies the namespace at start, and
		// nothing may leave before the policy is in force.
		a, err := egress.Apply(ctx, n.netns, s.t.opts.EgressName, s.t.opts.EgressRules)
		if err != nil {
			return err
		}
		n.applied = a
	}
	_, err := s.cli.ContainerStart(ctx, s.id, client.ContainerStartOptions{})
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	// Before anything but the container's sleep runs in it.
	return s.checkPlaces(ctx, pins)
}

// request is the container's config and host config for one session.
func (t *Target) request(spec targets.Spec, img string, plan *netPlan) (*container.Config, *container.HostConfig, error) {
	hc, err := t.spec.hostConfig(plan.mode)
	if err != nil {
		return nil, nil, err
	}
	if plan.runtime != "" {
		hc.Runtime = plan.runtime
	}
	for i, m := range hc.Mounts {
		if hc.Mounts[i].Source, err = targets.Expand(m.Source, spec); err != nil {
			return nil, nil, fmt.Errorf("mount %s: %w", m.Target, err)
		}
	}
	if t.spec.ReadOnly {
		// The daemon refuses copies into a read-only root, but copies into
		// a volume; root owns it, so the normal path cannot change the probe.
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeVolume, Target: toolsDir})
	}
	if plan.resolvFile != "" {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: plan.resolvFile, Target: "/etc/resolv.conf", ReadOnly: true})
	}
	hc.Mounts = append(hc.Mounts, plan.fileMounts...)
	env := mergeEnv(t.opts.Env, t.spec.Env, spec.Env)
	for k, v := range env {
		if env[k], err = targets.Expand(v, spec); err != nil {
			return nil, nil, fmt.Errorf("env %s: %w", k, err)
		}
	}
	cfg := &container.Config{
		Image:  img,
		Env:    envList(env),
		Labels: map[string]string{"gatehouse.session": spec.Name},
		User:   t.spec.User,
		Cmd:    []string{"infinity"},
	}
	if t.spec.Image == "" {
		cfg.Entrypoint = []string{"/bin/sleep"}
	} else {
		// A user image may have no sleep: bring a static one.
		cfg.Entrypoint = []string{toolsDir + "/bin/busybox", "sleep"}
	}
	return cfg, hc, nil
}

// placeFiles copies the session's files in through the archive API,
// unless stageFiles bound them already (lab daemon).
func (s *Session) placeFiles(ctx context.Context, spec targets.Spec) error {
	if s.net.filesDir != "" {
		s.hasProbe.Store(s.net.hasProbe)
		return nil
	}
	for p, f := range s.t.sessionFiles(spec.Files) {
		var r io.Reader = bytes.NewReader(f.Data)
		if f.HostPath != "" {
			fh, err := os.Open(f.HostPath)
			if err != nil {
				return fmt.Errorf("file %s: %w", p, err)
			}
			defer fh.Close()
			r = fh
		}
		if err := s.CopyIn(ctx, p, r, f.Mode); err != nil {
			return err
		}
	}
	return nil
}

func mergeEnv(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_.-]`)

func containerName(session string) string {
	if session == "" {
		return ""
	}
	return "gatehouse-" + unsafeName.ReplaceAllString(session, "-")
}

// resolvPath is where a session's resolv.conf is written on the host.
func resolvPath(d *Daemon, name string) string {
	return filepath.Join(d.SessionsDir(), unsafeName.ReplaceAllString(name, "-")+".resolv.conf")
}
