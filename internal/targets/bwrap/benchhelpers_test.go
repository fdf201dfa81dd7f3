package bwrap_test

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
)

func benchNeed(b *testing.B) {
	b.Helper()
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	for _, tool := range []string{"bwrap", "nsenter", "nft", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Skipf("needs %s", tool)
		}
	}
}

func benchProfile(b *testing.B, name string) *profile.Profile {
	b.Helper()
	p, err := kinds.LoadFS(profiles.FS, name)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func benchNetns(b *testing.B) targets.Network {
	b.Helper()
	buf := make([]byte, 4)
	_, _ = rand.Read(buf)
	name := "gh-t" + hex.EncodeToString(buf)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	b.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	_ = exec.Command("ip", "-n", name, "link", "set", "lo", "up").Run()
	return targets.Network{NetnsName: name, NetnsPath: "/run/netns/" + name}
}
