package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/moby/moby/client"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// Inspect reads back what the daemon and runtime applied (docker inspect),
// plus facts from inside: the probe's `facts` when it was copied in, else
// busybox's uname, so the kernel that answers (gVisor's own) shows.
func (s *Session) Inspect(ctx context.Context) (targets.Config, error) {
	res, err := s.cli.ContainerInspect(ctx, s.id, client.ContainerInspectOptions{})
	if err != nil {
		return targets.Config{}, fmt.Errorf("docker: inspect: %w", err)
	}
	ci := res.Container
	cfg := targets.Config{Target: s.t.Name(), Facts: map[string]string{}, Argv: append([]string{ci.Path}, ci.Args...)}
	f := cfg.Facts
	f["container_id"] = ci.ID
	f["image_id"] = ci.Image
	cfg.Image = ci.Image
	f["apparmor"] = ci.AppArmorProfile
	if hc := ci.HostConfig; hc != nil {
		cfg.Runtime = hc.Runtime
		f["privileged"] = strconv.FormatBool(hc.Privileged)
		f["cap_add"] = strings.Join(hc.CapAdd, ",")
		f["cap_drop"] = strings.Join(hc.CapDrop, ",")
		if s.path == targets.PathBreach && s.t.spec.BreachCaps != nil {
			how := "set on every root exec by the lab daemon's shim"
			if s.net == nil || !s.net.shimmed {
				how = "NOT applied: no Gatehouse shim on this daemon"
			}
			f["root_exec_caps"] = strings.Join(ociCaps(s.t.spec.BreachCaps), ",") + " (" + how + ")"
		}
		f["security_opt"] = strings.Join(hc.SecurityOpt, " ")
		f["seccomp_profile"] = seccompOf(hc.SecurityOpt, hc.Privileged)
		f["readonly_rootfs"] = strconv.FormatBool(hc.ReadonlyRootfs)
		f["network_mode"] = string(hc.NetworkMode)
		f["pid_mode"] = string(hc.PidMode)
		f["ipc_mode"] = string(hc.IpcMode)
		f["memory_bytes"] = strconv.FormatInt(hc.Memory, 10)
		f["nano_cpus"] = strconv.FormatInt(hc.NanoCPUs, 10)
		if hc.PidsLimit != nil {
			f["pids_limit"] = strconv.FormatInt(*hc.PidsLimit, 10)
		}
	}
	if c := ci.Config; c != nil {
		f["image"] = c.Image
		f["user"] = c.User
		f["env_names"] = envNames(c.Env)
	}
	if ns := ci.NetworkSettings; ns != nil {
		var addrs []string
		for name, ep := range ns.Networks {
			if ep != nil && ep.IPAddress.IsValid() {
				addrs = append(addrs, name+"="+ep.IPAddress.String())
			}
		}
		sort.Strings(addrs)
		f["addresses"] = strings.Join(addrs, ",")
	}
	if n := s.net; n != nil {
		if n.note != "" {
			f["network_note"] = n.note
		}
		if n.shimmed {
			// The runtime the daemon ran is our shim around the real one.
			cfg.Runtime = strings.TrimPrefix(cfg.Runtime, runtimePrefix)
			f["oci_runtime"] = runtimePrefix + cfg.Runtime + " (Gatehouse netns shim around " + cfg.Runtime + ")"
			f["runtime_flags"] = strings.Join(s.t.spec.RuntimeFlags, " ")
			f["netns"] = n.netns
		}
		if n.applied != nil {
			if rs, err := n.applied.Ruleset(ctx); err == nil {
				f["nft_ruleset"] = rs
			} else {
				f["nft_ruleset_error"] = err.Error()
			}
		}
	}
	for _, m := range ci.Mounts {
		rw := "ro"
		if m.RW {
			rw = "rw"
		}
		cfg.Mounts = append(cfg.Mounts, fmt.Sprintf("%s %s -> %s (%s)", m.Type, m.Source, m.Destination, rw))
	}
	f["stop_limit"] = s.stopLimit().String()
	f["stop_scope"] = StopScopeSession
	if s.t.spec.StopScope == StopScopeProcess {
		f["stop_scope"] = StopScopeProcess
	}
	initPID := 0
	if ci.State != nil {
		initPID = ci.State.Pid
	}
	s.outsideFacts(ctx, cfg.Runtime, initPID, f)
	if err := s.insideFacts(ctx, f); err != nil {
		f["inside_error"] = err.Error()
	}
	return cfg, nil
}

// seccompOf names the seccomp profile the daemon applied: privileged
// containers run unconfined whatever the options say.
func seccompOf(opts []string, privileged bool) string {
	if privileged {
		return "unconfined (privileged)"
	}
	for _, o := range opts {
		if v, ok := strings.CutPrefix(o, "seccomp="); ok {
			if v == "unconfined" {
				return v
			}
			return "custom"
		}
	}
	return "daemon default"
}

// insideFacts adds what the sandbox itself reports, prefixed "inside.".
func (s *Session) insideFacts(ctx context.Context, f map[string]string) error {
	var out, errb bytes.Buffer
	if s.hasProbe.Load() {
		res, err := s.Exec(ctx, targets.Command{Args: []string{wire.SandboxPath, "facts"}, Stdout: &out, Stderr: &errb})
		if err != nil {
			return err
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("probe facts: exit %d: %s", res.ExitCode, capped(errb.String()))
		}
		var pf wire.Facts
		if err := json.Unmarshal(out.Bytes(), &pf); err != nil {
			return fmt.Errorf("probe facts: %w", err)
		}
		f["inside.kernel"] = pf.Kernel
		f["inside.uid"] = strconv.Itoa(pf.UID)
		f["inside.cap_eff"] = pf.CapEff
		f["inside.seccomp"] = pf.Seccomp
		f["inside.no_new_privs"] = pf.NoNewPrivs
		f["inside.uid_map"] = pf.UIDMap
		f["inside.addrs"] = strings.Join(pf.Addrs, ",")
		f["inside.resolv_conf"] = pf.Resolv
		return nil
	}
	uname := []string{s.applet("uname"), "-a"}
	res, err := s.Exec(ctx, targets.Command{Args: uname, Stdout: &out, Stderr: &errb})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("uname: exit %d: %s", res.ExitCode, capped(errb.String()))
	}
	f["inside.kernel"] = strings.TrimSpace(capped(out.String()))
	return nil
}

// envNames lists variable names only: values may be (canary) secrets.
func envNames(env []string) string {
	names := make([]string, 0, len(env))
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

func capped(s string) string {
	if len(s) > 512 {
		return s[:512]
	}
	return s
}
