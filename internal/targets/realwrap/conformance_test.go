package realwrap_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	osexec "os/exec"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/targets/exec"
	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
	"github.com/gatehouse-dev/gatehouse/targets/targettest"
)

// Each real wrapper passes the conformance suite on both paths, in a
// namespace of its own with only lo: nothing it starts can reach a network.
func TestConformance(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: joins network namespaces, mounts, cgroups")
	}
	for _, name := range []string{"srt-default.yaml", "codex-network-proxy.yaml", "codex-workspace-write.yaml"} {
		for _, path := range []targets.Path{targets.PathNormal, targets.PathBreach} {
			t.Run(name+"/"+string(path), func(t *testing.T) {
				p, err := kinds.LoadFS(profiles.FS, name)
				if err != nil {
					t.Fatal(err)
				}
				tgt := newTarget(t, exec.Options{Profile: p, Root: t.TempDir(), Init: probetest.Build(t)})
				t.Cleanup(func() {
					if err := tgt.Close(context.Background()); err != nil {
						t.Errorf("Close: %v", err)
					}
				})
				targettest.Run(t, func(t *testing.T) (targets.Target, targets.Spec) {
					return tgt, withPlaces(t, targets.Spec{Name: "conf", Path: path, Network: emptyNetns(t)})
				})
			})
		}
	}
}

func emptyNetns(t testing.TB) targets.Network {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "gh-rw" + hex.EncodeToString(b)
	if out, err := osexec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = osexec.Command("ip", "netns", "del", name).Run() })
	_ = osexec.Command("ip", "-n", name, "link", "set", "lo", "up").Run()
	return targets.Network{NetnsPath: "/run/netns/" + name, NetnsName: name}
}

func withPlaces(t testing.TB, spec targets.Spec) targets.Spec {
	spec.Places = map[string]string{}
	for _, pl := range targets.ProvidedPlaces() {
		spec.Places[pl.Name] = t.TempDir()
	}
	targettest.RecordPlaces(t, &spec)
	spec.Secrets = map[string]string{"broker-token": "test-token"}
	return spec
}
