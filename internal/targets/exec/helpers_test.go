package exec_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	osexec "os/exec"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	gexec "github.com/gatehouse-dev/gatehouse/internal/targets/exec"
	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
	"github.com/gatehouse-dev/gatehouse/targets/targettest"
)

// needRoot skips unless the test can create namespaces, mounts and cgroups.
func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: joins network namespaces, mounts, cgroups")
	}
	for _, tool := range []string{"nft", "ip"} {
		if _, err := osexec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
}

// needFirejail skips, with the reason, when firejail is not installed.
func needFirejail(t testing.TB) {
	t.Helper()
	if _, err := osexec.LookPath("firejail"); err != nil {
		t.Skipf("firejail is not installed (scripts/setup.sh installs it): %v", err)
	}
}

// newNetns makes a session namespace with only lo up: nothing the sandbox
// sends can leave it.
func newNetns(t testing.TB) targets.Network {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "gh-t" + hex.EncodeToString(b)
	if out, err := osexec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := osexec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	_ = osexec.Command("ip", "-n", name, "link", "set", "lo", "up").Run()
	return targets.Network{NetnsName: name, NetnsPath: "/run/netns/" + name, Resolver: "203.0.113.53"}
}

func loadTestdata(t testing.TB, name string) *profile.Profile {
	t.Helper()
	p, err := kinds.Load("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func shipped(t testing.TB, name string) *profile.Profile {
	t.Helper()
	p, err := kinds.LoadFS(profiles.FS, name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newTarget(t testing.TB, p *profile.Profile) *gexec.Target {
	return gexec.New(gexec.Options{Profile: p, Root: t.TempDir(), Init: probetest.Build(t)})
}

// withPlaces gives a spec the places a profile names, as folders.
func withPlaces(t testing.TB, spec targets.Spec) targets.Spec {
	t.Helper()
	spec.Places = map[string]string{}
	for _, pl := range targets.ProvidedPlaces() {
		spec.Places[pl.Name] = t.TempDir()
	}
	targettest.RecordPlaces(t, &spec)
	spec.Secrets = map[string]string{}
	for _, sc := range targets.ProvidedSecrets() {
		spec.Secrets[sc.Name] = "canary-" + sc.Name
	}
	return spec
}

func startSession(t testing.TB, p *profile.Profile, spec targets.Spec) targets.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := newTarget(t, p).Start(ctx, withPlaces(t, spec))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return s
}
