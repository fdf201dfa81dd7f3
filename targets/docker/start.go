package docker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"gatehouse/targets"
)

// toolsDir holds what Gatehouse copies in: the probe, and busybox for
// images that have no sleep of their own.
const toolsDir = "/gatehouse"

// Start creates and starts a container that only sleeps; commands run in it
// through Exec. Nothing is pulled: the image must already be on the daemon.
func (t *Target) Start(ctx context.Context, spec targets.Spec) (targets.Session, error) {
	if !spec.Path.Valid() {
		return nil, fmt.Errorf("docker: start: unknown path %q", spec.Path)
	}
	img, err := t.image(ctx)
	if err != nil {
		return nil, fmt.Errorf("docker: start: %w", err)
	}
	mode, note := networkMode(t.spec.Network, spec.Network)
	hc, err := t.spec.hostConfig(mode)
	if err != nil {
		return nil, fmt.Errorf("docker: start: %w", err)
	}
	if t.spec.ReadOnly {
		// The daemon refuses copies into a read-only root, but copies into
		// a volume; root owns it, so the normal path cannot change the probe.
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeVolume, Target: toolsDir})
	}
	req := testcontainers.ContainerRequest{
		Image:  img,
		Name:   containerName(spec.Name),
		Env:    mergeEnv(t.spec.Env, spec.Env),
		Labels: map[string]string{"gatehouse.session": spec.Name},
		ConfigModifier: func(c *container.Config) {
			c.User = t.spec.User
		},
		HostConfigModifier: func(h *container.HostConfig) { *h = *hc },
	}
	if t.spec.Image == "" {
		req.Entrypoint = []string{"/bin/sleep"}
	} else {
		// A user image may have no sleep: bring a static one.
		req.Entrypoint = []string{toolsDir + "/bin/busybox", "sleep"}
	}
	req.Cmd = []string{"infinity"}
	// Created, not started: files go in first (our CopyIn, which also
	// works on a read-only root), then the container starts.
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{ContainerRequest: req, Started: false, Logger: tclog.NewNoopLogger()})
	if err != nil {
		if c != nil {
			_ = c.Terminate(context.WithoutCancel(ctx))
		}
		return nil, fmt.Errorf("docker: start: %w", err)
	}
	dc, ok := c.(*testcontainers.DockerContainer)
	if !ok {
		_ = c.Terminate(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("docker: start: unexpected container type %T", c)
	}
	cli, err := t.client()
	if err != nil {
		_ = c.Terminate(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("docker: start: %w", err)
	}
	s := &Session{t: t, c: dc, cli: cli, path: spec.Path, netNote: note}
	if err := s.placeFiles(ctx, spec.Files); err != nil {
		_ = s.Stop(ctx)
		return nil, fmt.Errorf("docker: start: %w", err)
	}
	if err := dc.Start(ctx); err != nil {
		_ = s.Stop(ctx)
		return nil, fmt.Errorf("docker: start: %w", err)
	}
	return s, nil
}

// placeFiles copies the spec's files, and busybox for a user image's sleep.
func (s *Session) placeFiles(ctx context.Context, files map[string]targets.File) error {
	if s.t.spec.Image != "" {
		files = maps.Clone(files)
		if files == nil {
			files = map[string]targets.File{}
		}
		files[toolsDir+"/bin/busybox"] = targets.File{HostPath: BusyboxPath, Mode: 0o755}
	}
	for p, f := range files {
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

// networkMode maps the profile's network onto a Docker network mode. "lab"
// is the daemon's default bridge, which routes only to the namespace the
// daemon runs in; without a session network from the harness the session
// gets none, as the Target contract asks. The note goes into Inspect.
func networkMode(profile string, n targets.Network) (string, string) {
	switch profile {
	case NetworkHost:
		return "host", "the daemon's network namespace"
	case NetworkLab:
		if n.NetnsPath == "" {
			return "none", "lab network asked, but the harness gave no session network: none"
		}
		return "bridge", "the lab daemon's default bridge; session netns " + n.NetnsName + " is not joined"
	default:
		return "none", ""
	}
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
