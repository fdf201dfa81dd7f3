package bwrap_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/targets/bwrap"
	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
)

// needSandbox skips unless the test can create namespaces and run bwrap.
func needSandbox(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces and cgroups")
	}
	for _, tool := range []string{"bwrap", "nsenter", "nft", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
}

// newNetns makes a session namespace with only lo up: no veth, so nothing
// the sandbox sends can leave it.
func newNetns(t *testing.T) targets.Network {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "gh-t" + hex.EncodeToString(b)
	run(t, "ip", "netns", "add", name)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	run(t, "ip", "-n", name, "link", "set", "lo", "up")
	return targets.Network{NetnsName: name, NetnsPath: "/run/netns/" + name}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v: %s", name, args, err, out)
	}
	return string(out)
}

func shipped(t *testing.T, name string) *profile.Profile {
	t.Helper()
	p, err := kinds.LoadFS(profiles.FS, name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startSession starts one session and stops it at cleanup.
func startSession(t *testing.T, p *profile.Profile, spec targets.Spec) (targets.Session, string) {
	t.Helper()
	root := t.TempDir()
	spec = withPlaces(t, p, spec)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := bwrap.New(bwrap.Options{Profile: p, Root: root, Init: probetest.Build(t)}).Start(ctx, spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
		// The leaky profile's stop leaves the init: the harness's own
		// teardown ends it and removes its socket, as a run does.
		if rp, ok := s.(interface{ Reap(context.Context) error }); ok {
			if err := rp.Reap(context.Background()); err != nil {
				t.Errorf("Reap: %v", err)
			}
		}
	})
	return s, root
}
