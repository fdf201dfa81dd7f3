package bwrap_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
)

// Inspect's facts come from the probe, run inside the sandbox: they must
// show the identity and namespaces the profile asked for.
func TestInspectMergesProbeFacts(t *testing.T) {
	needSandbox(t)
	if _, err := os.Stat("../../../cmd/gatehouse-probe/main.go"); err != nil && os.Getenv("GATEHOUSE_PROBE") == "" {
		t.Skip("the probe command is not in this tree yet")
	}
	bin := probetest.Build(t)
	for _, tc := range []struct {
		path targets.Path
		uid  string
	}{{targets.PathNormal, "1000"}, {targets.PathBreach, "0"}} {
		t.Run(string(tc.path), func(t *testing.T) {
			spec := targets.Spec{Name: "facts", Path: tc.path, Network: newNetns(t),
				Files: map[string]targets.File{wire.SandboxPath: {HostPath: bin, Mode: 0o755}}}
			s, _ := startSession(t, shipped(t, profiles.Hardened), spec)
			cfg, err := s.Inspect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			f := cfg.Facts
			if f["uid"] != tc.uid || f["hostname"] != "agent-sandbox" || f["cap_eff"] == "" || f["ns.net"] == "" {
				t.Fatalf("facts: uid %q hostname %q cap_eff %q ns.net %q", f["uid"], f["hostname"], f["cap_eff"], f["ns.net"])
			}
			if !strings.Contains(f["uid_map"], tc.uid) || !strings.Contains(f["resolv_conf"], "203.0.113.53") {
				t.Fatalf("uid_map %q resolv_conf %q", f["uid_map"], f["resolv_conf"])
			}
			if strings.Trim(f["cap_eff"], "0") != "" {
				t.Fatalf("cap_eff %q: the hardened profile gives no capabilities on either path", f["cap_eff"])
			}
			if len(cfg.Mounts) == 0 {
				t.Fatal("no mounts reported")
			}
		})
	}
}
