package profile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/targets/bwrap"
	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
)

func TestShippedProfilesLoad(t *testing.T) {
	for _, tc := range []struct {
		file    string
		network profile.Network
		files   []string
	}{
		{profiles.Hardened, profile.NetworkLab, []string{"bwrap-hardened.nft", "bwrap-hardened.yaml"}},
		{profiles.Leaky, profile.NetworkLab, []string{"bwrap-leaky.yaml"}},
		{profiles.Offline, profile.NetworkNone, []string{"bwrap-offline.yaml"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			p, err := kinds.LoadFS(profiles.FS, tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if p.Target != "bwrap" || p.Network != tc.network || len(bwrap.SectionOf(p).Args) == 0 {
				t.Fatalf("decoded %+v", p)
			}
			var got []string
			for k := range p.Files() {
				got = append(got, k)
			}
			if strings.Join(sorted(got), ",") != strings.Join(tc.files, ",") {
				t.Fatalf("Files() = %v, want %v", got, tc.files)
			}
			if !strings.HasPrefix(p.Digest(), "sha256:") || len(p.Digest()) != 71 {
				t.Fatalf("Digest() = %q", p.Digest())
			}
			if p.StopGrace() != 5*time.Second {
				t.Fatalf("StopGrace = %v", p.StopGrace())
			}
		})
	}
}

func TestHardenedIdentities(t *testing.T) {
	p, err := kinds.LoadFS(profiles.FS, profiles.Hardened)
	if err != nil {
		t.Fatal(err)
	}
	if id := p.Identity(targets.PathNormal); id.UID != 1000 || id.GID != 1000 || id.CapAdd != nil {
		t.Fatalf("normal identity %+v", id)
	}
	// cap_add: [] must stay distinguishable from an absent cap_add.
	if id := p.Identity(targets.PathBreach); id.UID != 0 || id.CapAdd == nil || len(id.CapAdd) != 0 {
		t.Fatalf("breach identity %+v", id)
	}
	if p.Resolver != "203.0.113.53" || p.Env["HOME"] != "/home/agent" {
		t.Fatalf("resolver/env: %q %v", p.Resolver, p.Env)
	}
}

const base = `name: t
target: bwrap
network: lab
paths:
  normal: {uid: 1000, gid: 1000}
  assume-breach: {uid: 0, gid: 0}
bwrap:
  args: [--unshare-user, --unshare-net]
`

func TestLoadRejects(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		field      string // the field the error must name
		line       int
		msg        string
	}{
		{"unknown field", base + "egres: x.nft\n", "egres", 9, "unknown field"},
		{"bad network", strings.Replace(base, "network: lab", "network: internet", 1), "network", 3, "not one of"},
		{"missing egress file", base + "egress: gone.nft\n", "egress", 9, "no such file"},
		{"egress outside folder", base + "egress: ../x.nft\n", "egress", 9, "next to the profile"},
		{"egress without lab", strings.Replace(base, "network: lab", "network: host", 1) + "egress: x.nft\n", "egress", 9, "needs network: lab"},
		{"missing uid", strings.Replace(base, "uid: 1000, ", "", 1), "paths.normal.uid", 5, "required"},
		{"missing name", strings.Replace(base, "name: t\n", "", 1), "name", 0, "required"},
		{"bad resolver", base + "resolver: dns.example\n", "resolver", 9, "not an IP"},
		{"uid in args", strings.Replace(base, "--unshare-net]", "--uid, '5']", 1), "bwrap.args", 8, "paths.*.uid"},
		{"fd option without file", strings.Replace(base, "--unshare-net]", "--seccomp, '3']", 1), "bwrap.args", 8, "descriptor"},
		{"bad capability", strings.Replace(base, "gid: 0}", "gid: 0, cap_add: [net_raw]}", 1), "paths.assume-breach.cap_add", 6, "capability"},
		{"bad duration", base + "limits: {stop: soon}\n", "", 9, "cannot unmarshal"},
		{"two documents", base + "---\nname: u\n", "", 0, "more than one"},
		{"secret process true says nothing of where", base + "secret_process: true\n", "secret_process", 9, "say where"},
		{"secret process inside needs a user", base + "secret_process: {where: inside}\n", "secret_process.user", 9, "required"},
		{"secret process nowhere", base + "secret_process: {where: cloud}\n", "secret_process.where", 9, "not inside or outside"},
		{"secret process outside has no user", base + "secret_process: {where: outside, user: agent}\n", "secret_process.user", 9, "only for where: inside"},
		{"another user cannot exist under bwrap", base + "secret_process: {where: inside, user: other}\n", "secret_process.user", 9, "maps one uid"},
		{"gVisor hides a process's environment from the host", strings.Replace(base, "target: bwrap", "target: gvisor", 1) + "secret_process: {where: inside, user: other}\n", "secret_process.where", 9, "gVisor's kernel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeProfile(t, tc.yaml, map[string]string{"x.nft": "table inet x {}\n"})
			_, err := kinds.Load(file)
			var pe *profile.Error
			if !errors.As(err, &pe) {
				t.Fatalf("Load() error = %v, want *profile.Error", err)
			}
			if pe.Field != tc.field || pe.Line != tc.line || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), file) {
				t.Fatalf("error %q: field %q line %d; want field %q line %d containing %q and the file name",
					err, pe.Field, pe.Line, tc.field, tc.line, tc.msg)
			}
		})
	}
}

func TestDigestFollowsReferencedFiles(t *testing.T) {
	file := writeProfile(t, base+"egress: x.nft\n", map[string]string{"x.nft": "table inet x {}\n"})
	p1, err := kinds.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	again, err := kinds.Load(file)
	if err != nil || again.Digest() != p1.Digest() {
		t.Fatalf("digest not stable: %v %s %s", err, again.Digest(), p1.Digest())
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(file), "x.nft"), []byte("table inet y {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p2, err := kinds.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if p2.Digest() == p1.Digest() {
		t.Fatal("digest did not change when the egress file changed")
	}
	if string(p2.Files()["x.nft"]) != "table inet y {}\n" {
		t.Fatalf("Files()[x.nft] = %q", p2.Files()["x.nft"])
	}
}

func TestBwrapArgFilesAreRecorded(t *testing.T) {
	y := strings.Replace(base, "--unshare-net]", "--unshare-net, --ro-bind-data, ./hosts, /etc/hosts, --ro-bind, ./resolv, /etc/resolv.conf]", 1)
	file := writeProfile(t, y, map[string]string{"hosts": "127.0.0.1 x\n", "resolv": "nameserver 203.0.113.53\n"})
	p, err := kinds.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := p.ArgFile(6); !ok || k != "resolv" {
		t.Fatalf("ArgFile(6) = %q %v", k, ok)
	}
	if k, ok := p.ArgFile(3); !ok || k != "hosts" {
		t.Fatalf("ArgFile(3) = %q %v (descriptor operand)", k, ok)
	}
	if _, ok := p.ArgFile(4); ok {
		t.Fatal("an in-sandbox destination is not a profile file")
	}
	if got := string(p.Files()["hosts"]); got != "127.0.0.1 x\n" {
		t.Fatalf("Files()[hosts] = %q", got)
	}
	if !strings.Contains(p.Listing(), "  resolv\n") {
		t.Fatalf("Listing() = %q", p.Listing())
	}
}

func writeProfile(t *testing.T, y string, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range extra {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(file, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func sorted(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}
