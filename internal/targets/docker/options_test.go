package docker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/targets/docker"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// TestHardenedOptionsApplied: what the profile asks for is what the daemon
// applied (Inspect) and what the sandbox sees from the inside.
func TestHardenedOptionsApplied(t *testing.T) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			needLab(t)
			if rt == "runsc" {
				needRunsc(t)
			}
			spec := docker.Spec{Runtime: rt, User: "1000:1000", CapDrop: []string{"ALL"}, ReadOnly: true,
				SecurityOpt: []string{"no-new-privileges"}, Network: docker.NetworkNone, Memory: "128m", PidsLimit: 64}
			_, s := start(t, spec, targets.Spec{Name: t.Name()})
			if _, out, _ := run(t, s, "", "id", "-u"); out != "1000\n" {
				t.Errorf("normal path uid = %q", out)
			}
			if code, _, _ := run(t, s, "", "sh", "-c", "echo x > /bin/x"); code == 0 {
				t.Error("wrote to a read-only root")
			}
			if _, out, _ := run(t, s, "", "sh", "-c", "grep CapEff /proc/self/status"); !strings.Contains(out, "0000000000000000") {
				t.Errorf("CapEff = %q, want none", out)
			}
			// The probe still gets in: a root-owned volume at /gatehouse.
			if err := s.CopyIn(context.Background(), "/gatehouse/bin/probe", strings.NewReader("#!/bin/sh\necho probe\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			if code, _, _ := run(t, s, "", "sh", "-c", "echo y > /gatehouse/bin/probe"); code == 0 {
				t.Error("normal path could overwrite the probe")
			}
			cfg, err := s.Inspect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"readonly_rootfs": "true", "cap_drop": "ALL", "user": "1000:1000",
				"memory_bytes": "134217728", "pids_limit": "64", "privileged": "false", "network_mode": "none"}
			for k, v := range want {
				if cfg.Facts[k] != v {
					t.Errorf("fact %s = %q, want %q", k, cfg.Facts[k], v)
				}
			}
		})
	}
}

// TestBreachPathRunsAsRoot: the assume-breach path is root in the guest
// even when the profile's user is not.
func TestBreachPathRunsAsRoot(t *testing.T) {
	needLab(t)
	_, s := start(t, docker.Spec{User: "1000", Network: docker.NetworkNone}, targets.Spec{Name: t.Name(), Path: targets.PathBreach})
	if _, out, _ := run(t, s, "", "id", "-u"); out != "0\n" {
		t.Errorf("breach path uid = %q", out)
	}
}

// TestLabWithoutSessionNetworkIsNone: the contract says a target given no
// session network gets no network at all.
func TestLabWithoutSessionNetworkIsNone(t *testing.T) {
	needLab(t)
	_, s := start(t, docker.Spec{Network: docker.NetworkLab}, targets.Spec{Name: t.Name()})
	cfg, err := s.Inspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Facts["network_mode"] != "none" || cfg.Facts["network_note"] == "" {
		t.Errorf("network_mode %q note %q", cfg.Facts["network_mode"], cfg.Facts["network_note"])
	}
}

// TestUserImageGetsBusybox: an image of the team's own (here: the base
// image named explicitly, read-only) runs with busybox brought in.
func TestUserImageGetsBusybox(t *testing.T) {
	needLab(t)
	ref, err := docker.BaseImage(context.Background(), labDaemon.Host(), docker.BusyboxPath)
	if err != nil {
		t.Fatal(err)
	}
	_, s := start(t, docker.Spec{Image: ref, ReadOnly: true, Network: docker.NetworkNone}, targets.Spec{Name: t.Name()})
	cfg, err := s.Inspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Argv, " "); got != "/gatehouse/bin/busybox sleep infinity" {
		t.Errorf("argv = %q", got)
	}
	if cfg.Facts["inside.kernel"] == "" {
		t.Errorf("no inside facts: %q", cfg.Facts["inside_error"])
	}
}
