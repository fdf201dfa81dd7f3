package profile_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
)

// Every shipped profile's host reach: the leaky ones and the wrappers that
// start as root reach the host, each with the field that says why; the
// hardened bwrap, docker and gVisor profiles do not.
func TestShippedProfilesHostReach(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string // "field: part of the reason"; none: out of reach
	}{
		{"bwrap-hardened.yaml", nil},
		{"bwrap-hardened-triage.yaml", nil},
		{"bwrap-offline.yaml", nil},
		{"docker-hardened.yaml", nil},
		{"gvisor-hardened.yaml", nil},
		{"bwrap-leaky.yaml", []string{"bwrap.args[17]: binds host /etc", "bwrap.args[20]: binds host /home", "bwrap.args[25]: binds host /dev",
			"bwrap.args: no --unshare-pid", "bwrap.args: no --unshare-ipc"}},
		{"bwrap-leaky-hostnet.yaml", []string{"network: host: the sandbox shares the lab's network namespace"}},
		{"docker-leaky.yaml", []string{"docker.pid: host", "docker.ipc: host", "docker.cap_add: CAP_SYS_ADMIN", "docker.cap_add: CAP_DAC_READ_SEARCH",
			"docker.mounts[6]: binds host /etc"}},
		{"firejail-hardened.yaml", []string{"paths.assume-breach: uid 0: the wrapper starts as root"}},
		{"srt-default.yaml", []string{"paths.assume-breach: uid 0", "target: srt: the sandbox writes its TMPDIR"}},
		{"srt-wildcard.yaml", []string{"paths.assume-breach: uid 0"}},
		{"codex-workspace-write.yaml", []string{"paths.assume-breach: uid 0", "target: codex-sandbox"}},
		{"codex-network-direct.yaml", []string{"paths.assume-breach: uid 0"}},
		{"codex-network-proxy.yaml", []string{"paths.assume-breach: uid 0"}},
	} {
		p, err := kinds.LoadFS(profiles.FS, tc.file)
		if err != nil {
			t.Fatal(err)
		}
		name := "out of reach"
		if len(tc.want) > 0 {
			name = "within reach"
		}
		t.Run(tc.file+" "+name, func(t *testing.T) {
			got := p.HostReach()
			if len(tc.want) == 0 && len(got) > 0 {
				t.Fatalf("HostReach() = %v, want none", got)
			}
			if len(tc.want) > 0 && len(got) == 0 {
				t.Fatal("HostReach() is empty")
			}
			for _, w := range tc.want {
				if !hasAccess(got, w) {
					t.Errorf("no %q in %v", w, got)
				}
			}
		})
	}
}

func hasAccess(as []profile.HostAccess, want string) bool {
	for _, a := range as {
		if strings.Contains(a.String(), want) {
			return true
		}
	}
	return false
}

// Each feature of a plan that puts the host within reach is named on its
// own, with its field; the features that do not are not.
func TestHostReachFeature(t *testing.T) {
	bw := func(args string) string {
		return "name: x\ntarget: bwrap\nnetwork: lab\npaths:\n  normal: {uid: 1000, gid: 1000}\n  assume-breach: {uid: 0, gid: 0}\nbwrap:\n  args: [" + args + "]\n"
	}
	const ns = "--unshare-user, --unshare-pid, --unshare-ipc"
	dk := func(section string) string { return dockerBase + "target: docker\ndocker:\n" + section }
	wrap := func(target, section string, breachUID int) string {
		return strings.Replace(dockerBase, "{uid: 0, gid: 0}", "{uid: "+strconv.Itoa(breachUID)+", gid: 0}", 1) + "target: " + target + "\n" + section
	}
	for _, tc := range []struct {
		name, yaml string
		want       string // "" = out of reach
	}{
		{"bwrap with every namespace", bw(ns), ""},
		{"bwrap --unshare-all", bw("--unshare-all, --share-net"), ""},
		{"bwrap binds the host's /", bw(ns + ", --ro-bind, /, /"), "bwrap.args[3]: binds host / at / (read-only): the host's root filesystem"},
		{"bwrap binds /run", bw(ns + ", --ro-bind, /run, /run"), "bwrap.args[3]: binds host /run"},
		{"bwrap binds the harness's tools", bw(ns + ", --bind, /var/cache, /x"), "the harness's own folder /var/cache/gatehouse"},
		{"bwrap binds root's home", bw(ns + ", --ro-bind, /root/.config, /x"), "root's home folder"},
		{"bwrap binds /usr read-only", bw(ns + ", --ro-bind, /usr, /usr"), ""},
		{"bwrap shares the host's pid namespace", bw("--unshare-user, --unshare-ipc"), "bwrap.args: no --unshare-pid"},
		{"bwrap shares the host's ipc namespace", bw("--unshare-user, --unshare-pid"), "bwrap.args: no --unshare-ipc"},
		{"network host", strings.Replace(bw(ns), "network: lab", "network: host", 1), "network: host"},
		{"docker, non-root, every capability dropped", dk("  cap_drop: [ALL]\n"), ""},
		{"docker, root with Docker's default capabilities", strings.Replace(dockerBase, "{uid: 1000, gid: 1000}", "{uid: 0, gid: 0}", 1) + "target: docker\n", ""},
		{"docker privileged", dk("  privileged: true\n"), "docker.privileged"},
		{"docker host pid", dk("  pid: host\n"), "docker.pid: host"},
		{"docker host ipc", dk("  ipc: host\n"), "docker.ipc: host"},
		{"docker SYS_ADMIN", dk("  cap_add: [SYS_ADMIN]\n"), "docker.cap_add: CAP_SYS_ADMIN for root on the assume-breach path"},
		{"docker DAC_READ_SEARCH", dk("  cap_add: [dac_read_search]\n"), "CAP_DAC_READ_SEARCH"},
		{"docker ALL", dk("  cap_add: [ALL]\n"), "CAP_SYS_MODULE"},
		{"docker SYS_ADMIN given to the assume-breach path only", strings.Replace(dockerBase, "{uid: 0, gid: 0}", "{uid: 0, gid: 0, cap_add: [CAP_SYS_ADMIN]}", 1) + "target: docker\n",
			"paths.assume-breach.cap_add: CAP_SYS_ADMIN"},
		{"docker SYS_ADMIN in a user namespace of its own", strings.Replace(dk("  cap_add: [SYS_ADMIN]\n  userns: private\n"), "network: lab", "network: none", 1), ""},
		{"gvisor SYS_ADMIN is gVisor's", dockerBase + "target: gvisor\ndocker:\n  cap_add: [SYS_ADMIN]\n", ""},
		{"docker mounts the engine's socket", dk("  mounts: [{type: bind, source: /var/run/docker.sock, target: /var/run/docker.sock}]\n"), "docker.mounts[0]: binds host /var/run/docker.sock"},
		{"docker mounts a place", dk("  mounts: [{type: bind, source: '{{place:storage}}', target: /workspace}]\n"), ""},
		{"firejail as root", wrap("firejail", "firejail: {args: [--private-tmp]}\n", 0), "paths.assume-breach: uid 0"},
		{"firejail as a user, private /tmp", wrap("firejail", "firejail: {args: [--private-tmp]}\n", 1001), ""},
		{"firejail as a user, the host's /tmp", wrap("firejail", "firejail: {args: [--private]}\n", 1001), "target: firejail without --private-tmp"},
		{"exec wrapper as a user", wrap("exec", "exec: {argv: [my-sandbox, --]}\n", 1001), "target: exec: what the wrapper makes of the host's /tmp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := kinds.Load(writeProfile(t, tc.yaml, nil))
			if err != nil {
				t.Fatal(err)
			}
			got := p.HostReach()
			switch {
			case tc.want == "" && len(got) > 0:
				t.Fatalf("HostReach() = %v, want none", got)
			case tc.want != "" && !hasAccess(got, tc.want):
				t.Fatalf("HostReach() = %v, want %q", got, tc.want)
			}
		})
	}
}

// Exposes finds a host path below a bind's source, never beside it; a
// wrapper exposes everything.
func TestExposes(t *testing.T) {
	bw := "name: x\ntarget: bwrap\nnetwork: lab\npaths:\n  normal: {uid: 1000, gid: 1000}\n  assume-breach: {uid: 0, gid: 0}\n" +
		"bwrap:\n  args: [--unshare-user, --unshare-pid, --unshare-ipc, --ro-bind, /opt/keys, /keys, --bind, /srv, /srv]\n"
	p, err := kinds.Load(writeProfile(t, bw, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path     string
		field    string // "" = not exposed
		writable bool
	}{
		{"/opt/keys/cosign.key", "bwrap.args[3]", false},
		{"/opt/keys", "bwrap.args[3]", false},
		{"/opt/keys-other/cosign.key", "", false},
		{"/opt/cosign.key", "", false},
		{"/srv/ci/cosign.key", "bwrap.args[6]", true},
	} {
		a, ok := p.Exposes(tc.path)
		if ok != (tc.field != "") || a.Field != tc.field || a.Writable != tc.writable {
			t.Errorf("Exposes(%s) = %+v, %v; want field %q writable %v", tc.path, a, ok, tc.field, tc.writable)
		}
	}
	w, err := kinds.LoadFS(profiles.FS, "firejail-hardened.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := w.Exposes("/root/ci/cosign.key"); !ok || a.Field != "target" {
		t.Errorf("a wrapper: Exposes = %+v, %v; want the whole host", a, ok)
	}
}
