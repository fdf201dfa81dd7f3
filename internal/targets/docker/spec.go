package docker

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/docker/go-units"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
)

// Spec is the docker section of a profile: the run options a team really
// uses, applied as given and read back by Inspect.
type Spec struct {
	Image   string `yaml:"image"`   // "" = Gatehouse's probe base image
	Runtime string `yaml:"runtime"` // runc, runsc, or any runtime the daemon knows; "" = daemon default
	// RuntimeFlags are global flags for the runtime on every call for the
	// container, e.g. runsc's --network=host (lab daemon only: the shim
	// adds them).
	RuntimeFlags []string          `yaml:"runtime_flags"`
	User         string            `yaml:"user"`         // user of the normal path, e.g. "1000:1000"
	CapAdd       []string          `yaml:"cap_add"`      // e.g. [NET_ADMIN]
	CapDrop      []string          `yaml:"cap_drop"`     // e.g. [ALL]
	Privileged   bool              `yaml:"privileged"`   // --privileged
	ReadOnly     bool              `yaml:"read_only"`    // read-only root filesystem
	Seccomp      string            `yaml:"seccomp"`      // "" daemon default, "unconfined", a JSON file's path, or JSON
	SecurityOpt  []string          `yaml:"security_opt"` // raw --security-opt values, e.g. no-new-privileges
	Mounts       []Mount           `yaml:"mounts"`
	Env          map[string]string `yaml:"env"`
	Network      string            `yaml:"network"` // none | lab | host
	PID          string            `yaml:"pid"`     // "" private, "host"
	IPC          string            `yaml:"ipc"`     // "" daemon default, private, shareable, host, none
	Memory       string            `yaml:"memory"`  // e.g. "256m"
	CPUs         float64           `yaml:"cpus"`    // e.g. 0.5
	PidsLimit    int64             `yaml:"pids_limit"`
	// Userns "private" runs the container in a user namespace of its own
	// (root inside is uid 1000000 outside), what a daemon started with
	// --userns-remap does for every container. Lab daemon only: its shim
	// adds the mappings; network none only. "" or "host": Docker's
	// default, the host's.
	Userns string `yaml:"userns"`

	// Not part of the docker section: the profile's limits, filled in by
	// the profile loader so that the target's Stop does what they say.
	StopLimit time.Duration `yaml:"-"` // grace between SIGTERM and SIGKILL; 0 = 5 s
	StopScope string        `yaml:"-"` // StopScopeSession ("" too) or StopScopeProcess
	// BreachCaps is the profile's paths.assume-breach.cap_add: nil keeps
	// what Docker gives a root exec (the container's capabilities, which
	// for a container whose user is not root are a bounding set only, so
	// none at all); a list, even empty, gives the assume-breach path's
	// root exactly these, as bwrap does. Lab daemon only: the shim sets
	// them on each root exec (rootcaps.go).
	BreachCaps []string `yaml:"-"`
}

// Stop scopes: what Session.Stop ends (profile limits.stop_scope).
const (
	StopScopeSession = "session" // the container and everything in it
	StopScopeProcess = "process" // only the exec'd commands: the careless stop
)

// Mount is one --mount: bind (a host path), volume (a named volume) or tmpfs.
type Mount struct {
	Type     string `yaml:"type"`   // bind | volume | tmpfs
	Source   string `yaml:"source"` // host path or volume name; empty for tmpfs
	Target   string `yaml:"target"`
	ReadOnly bool   `yaml:"read_only"`
}

// Network modes a profile can ask for.
const (
	NetworkNone = "none"
	NetworkLab  = "lab"  // the lab daemon's default bridge, routed to the lab namespace
	NetworkHost = "host" // the daemon's own namespace: the lab namespace in the lab
)

// Validate reports the first option Gatehouse cannot apply faithfully.
func (s Spec) Validate() error {
	switch s.Network {
	case "", NetworkNone, NetworkLab, NetworkHost:
	default:
		return fmt.Errorf("docker: spec: network %q is not none, lab or host", s.Network)
	}
	for _, f := range s.RuntimeFlags {
		if !strings.HasPrefix(f, "-") {
			return fmt.Errorf("docker: spec: runtime flag %q does not start with -", f)
		}
	}
	for _, m := range s.Mounts {
		switch m.Type {
		case "bind", "volume", "tmpfs":
		default:
			return fmt.Errorf("docker: spec: mount %q: type %q is not bind, volume or tmpfs", m.Target, m.Type)
		}
		if !strings.HasPrefix(m.Target, "/") {
			return fmt.Errorf("docker: spec: mount target %q is not absolute", m.Target)
		}
	}
	switch s.Userns {
	case "", "host":
	case "private":
		// runc exec enters the container's user namespace first, and from
		// there may not join a network namespace owned by the harness's.
		if s.Network != NetworkNone {
			return fmt.Errorf("docker: spec: userns private works only with network none: execs could not join the session's network namespace, which the harness's user namespace owns")
		}
	default:
		return fmt.Errorf("docker: spec: userns %q is not host or private", s.Userns)
	}
	switch s.StopScope {
	case "", StopScopeSession, StopScopeProcess:
	default:
		return fmt.Errorf("docker: spec: stop scope %q is not session or process", s.StopScope)
	}
	if s.Memory != "" {
		if _, err := units.RAMInBytes(s.Memory); err != nil {
			return fmt.Errorf("docker: spec: memory: %w", err)
		}
	}
	return nil
}

// hostConfig turns the spec into the daemon's HostConfig. netMode is
// decided by the caller (it depends on the session network too).
func (s Spec) hostConfig(netMode string) (*container.HostConfig, error) {
	hc := &container.HostConfig{
		Runtime:        s.Runtime,
		Privileged:     s.Privileged,
		ReadonlyRootfs: s.ReadOnly,
		CapAdd:         s.CapAdd,
		CapDrop:        s.CapDrop,
		SecurityOpt:    append([]string(nil), s.SecurityOpt...),
		NetworkMode:    container.NetworkMode(netMode),
		PidMode:        container.PidMode(s.PID),
		IpcMode:        container.IpcMode(s.IPC),
	}
	if s.Seccomp != "" {
		// The API takes the profile's JSON itself (the CLI reads the file).
		v := s.Seccomp
		if v != "unconfined" && !strings.HasPrefix(strings.TrimSpace(v), "{") {
			b, err := os.ReadFile(v)
			if err != nil {
				return nil, fmt.Errorf("seccomp profile: %w", err)
			}
			v = string(b)
		}
		hc.SecurityOpt = append(hc.SecurityOpt, "seccomp="+v)
	}
	if s.Memory != "" {
		b, err := units.RAMInBytes(s.Memory)
		if err != nil {
			return nil, err
		}
		hc.Resources.Memory = b
	}
	if s.CPUs > 0 {
		hc.Resources.NanoCPUs = int64(s.CPUs * 1e9)
	}
	if s.PidsLimit > 0 {
		limit := s.PidsLimit
		hc.Resources.PidsLimit = &limit
	}
	for _, m := range s.Mounts {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.Type(m.Type), Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly})
	}
	return hc, nil
}
