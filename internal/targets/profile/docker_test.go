package profile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/targets/docker/dockerkind"
	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
)

// TestShippedDockerProfilesLoad: the docker and gvisor profiles load
// strictly, and the docker section the target gets is complete (network,
// user and runtime filled from the rest of the profile).
func TestShippedDockerProfilesLoad(t *testing.T) {
	for _, tc := range []struct {
		file, target, runtime, user, network string
		check                                func(p *profile.Profile) bool
	}{
		{"docker-hardened.yaml", "docker", "runc", "1000:1000", "lab", func(p *profile.Profile) bool {
			return dockerkind.SpecOf(p).ReadOnly && dockerkind.SpecOf(p).CapDrop[0] == "ALL" && p.Egress == "docker-hardened.nft"
		}},
		{"gvisor-hardened.yaml", "gvisor", "runsc", "1000:1000", "lab", func(p *profile.Profile) bool {
			return dockerkind.SpecOf(p).ReadOnly && strings.Join(dockerkind.SpecOf(p).RuntimeFlags, " ") == "--network=host"
		}},
		{"docker-leaky.yaml", "docker", "runc", "0:0", "lab", func(p *profile.Profile) bool {
			return len(dockerkind.SpecOf(p).CapAdd) == 5 && dockerkind.SpecOf(p).PID == "host" && dockerkind.SpecOf(p).Seccomp == "unconfined" && len(dockerkind.SpecOf(p).Mounts) == 12
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			p, err := kinds.LoadFS(profiles.FS, tc.file)
			if err != nil {
				t.Fatal(err)
			}
			d := dockerkind.SpecOf(p)
			if p.Target != tc.target || d.Runtime != tc.runtime || d.User != tc.user || d.Network != tc.network || string(p.Network) != tc.network {
				t.Errorf("target %q runtime %q user %q network %q/%q", p.Target, d.Runtime, d.User, d.Network, p.Network)
			}
			if !tc.check(p) {
				t.Errorf("decoded docker section lost options: %+v", d)
			}
		})
	}
}

const dockerBase = "name: x\nnetwork: lab\npaths:\n  normal: {uid: 1000, gid: 1000}\n  assume-breach: {uid: 0, gid: 0}\n"

// TestDockerSectionRejects: mistakes in the docker section fail the load
// with the field named, never a silently weaker container.
func TestDockerSectionRejects(t *testing.T) {
	for _, tc := range []struct{ name, yaml, field string }{
		{"unknown field", "target: docker\ndocker:\n  priviliged: true\n", "priviliged"},
		{"network differs", "target: docker\ndocker: {network: host}\n", "docker.network"},
		{"gvisor with runc", "target: gvisor\ndocker: {runtime: runc}\n", "docker.runtime"},
		{"user is not paths.normal", "target: docker\ndocker: {user: \"0:0\"}\n", "docker.user"},
		{"bad mount type", "target: docker\ndocker:\n  mounts: [{type: nfs, source: x, target: /x}]\n", "docker"},
		{"docker section on bwrap", "target: bwrap\nbwrap: {args: [--unshare-user]}\ndocker: {privileged: true}\n", "docker"},
		{"missing seccomp file", "target: docker\ndocker: {seccomp: gone.json}\n", "docker.seccomp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "p.yaml")
			if err := os.WriteFile(file, []byte(dockerBase+tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := kinds.Load(file)
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("err = %v, want one naming %s", err, tc.field)
			}
		})
	}
}

// TestDockerSeccompFileRecorded: a seccomp profile next to the profile is
// read, inlined for the daemon, and recorded with the policy's files.
func TestDockerSeccompFileRecorded(t *testing.T) {
	dir := t.TempDir()
	sec := `{"defaultAction": "SCMP_ACT_ERRNO"}`
	if err := os.WriteFile(filepath.Join(dir, "sec.json"), []byte(sec), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(file, []byte(dockerBase+"target: gvisor\ndocker: {seccomp: sec.json}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := kinds.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if dockerkind.SpecOf(p).Seccomp != sec || dockerkind.SpecOf(p).Runtime != "runsc" {
		t.Errorf("seccomp %q runtime %q", dockerkind.SpecOf(p).Seccomp, dockerkind.SpecOf(p).Runtime)
	}
	if b, ok := p.File("sec.json"); !ok || string(b) != sec {
		t.Errorf("sec.json not among the policy files: %v", ok)
	}
}
