package dockerkind

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// fields checks what docker.Spec.Validate leaves to the daemon: a
// mistake there fails every container create of the run, which would be
// sixteen INCONCLUSIVE scenarios instead of one clear error now.
func fields(l *profile.Loading) error {
	d := SpecOf(l.Profile())
	switch d.Runtime {
	case "", "runc", "runsc":
	default:
		// The lab daemon declares exactly these (with Gatehouse's shim).
		return l.Fail("docker.runtime", fmt.Errorf("%q: the lab daemon runs runc or runsc", d.Runtime))
	}
	for _, f := range []struct {
		field string
		caps  []string
	}{{"docker.cap_add", d.CapAdd}, {"docker.cap_drop", d.CapDrop}} {
		for i, c := range f.caps {
			if !profile.KnownCap(c) {
				return l.Fail(fmt.Sprintf("%s[%d]", f.field, i), fmt.Errorf("%q is not a capability name like NET_RAW, or ALL", c))
			}
		}
	}
	switch d.PID {
	case "", "host":
	default:
		return l.Fail("docker.pid", fmt.Errorf("%q: only host, or empty for a pid namespace of the container's own", d.PID))
	}
	switch d.IPC {
	case "", "private", "shareable", "host", "none":
	default:
		return l.Fail("docker.ipc", fmt.Errorf("%q is not private, shareable, host or none", d.IPC))
	}
	if d.CPUs < 0 {
		return l.Fail("docker.cpus", errors.New("must not be negative"))
	}
	if d.PidsLimit < -1 {
		return l.Fail("docker.pids_limit", errors.New("must be -1 (unlimited), 0 (default) or a limit"))
	}
	for k := range d.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return l.Fail("docker.env", fmt.Errorf("bad variable name %q", k))
		}
	}
	if err := securityOpts(l); err != nil {
		return err
	}
	return mounts(l)
}

// securityOpts checks security_opt the way the daemon parses it.
func securityOpts(l *profile.Loading) error {
	d := SpecOf(l.Profile())
	for i, o := range d.SecurityOpt {
		field := fmt.Sprintf("docker.security_opt[%d]", i)
		if o == "no-new-privileges" || o == "disable" {
			continue
		}
		k, val, ok := strings.Cut(o, "=")
		if !ok {
			k, val, ok = strings.Cut(o, ":")
		}
		if !ok {
			return l.Fail(field, fmt.Errorf("%q is not KEY=VALUE (or no-new-privileges)", o))
		}
		switch k {
		case "label", "apparmor":
		case "no-new-privileges":
			if _, err := strconv.ParseBool(val); err != nil {
				return l.Fail(field, fmt.Errorf("%q: no-new-privileges takes true or false", o))
			}
		case "seccomp":
			return l.Fail(field, errors.New("say seccomp in docker.seccomp, where it is recorded with the policy"))
		default:
			return l.Fail(field, fmt.Errorf("%q: the daemon knows label, apparmor and no-new-privileges", o))
		}
	}
	if s := strings.TrimSpace(d.Seccomp); strings.HasPrefix(s, "{") && !json.Valid([]byte(s)) {
		return l.Fail("docker.seccomp", errors.New("the seccomp profile is not valid JSON"))
	}
	return nil
}

// dockerMounts checks each mount's source and target.
func mounts(l *profile.Loading) error {
	targetsSeen := map[string]int{}
	for i, m := range SpecOf(l.Profile()).Mounts {
		field := fmt.Sprintf("docker.mounts[%d]", i)
		switch m.Type {
		case "bind":
			if m.Source == "" {
				return l.Fail(field+".source", errors.New("a bind needs a host path"))
			}
			if !strings.HasPrefix(m.Source, "/") && !strings.HasPrefix(m.Source, "{{place:") {
				return l.Fail(field+".source", fmt.Errorf("%q is not an absolute host path or a {{place:NAME}}", m.Source))
			}
		case "volume":
			if strings.Contains(m.Source, "/") {
				return l.Fail(field+".source", fmt.Errorf("%q is a path, not a volume name: use type bind", m.Source))
			}
		case "tmpfs":
			if m.Source != "" {
				return l.Fail(field+".source", errors.New("a tmpfs has no source"))
			}
		}
		if j, dup := targetsSeen[m.Target]; dup {
			return l.Fail(field+".target", fmt.Errorf("%q is also the target of docker.mounts[%d]", m.Target, j))
		}
		targetsSeen[m.Target] = i
	}
	return nil
}
