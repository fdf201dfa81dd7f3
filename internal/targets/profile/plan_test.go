package profile_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
)

// Binds of well-known dangerous host paths are warnings with the field and
// line, never errors; harmless binds and the harness's own places are not.
func TestDangerousBindsAreWarnings(t *testing.T) {
	bind := func(opt, src string) string {
		return strings.Replace(base, "--unshare-net]", "--unshare-net, "+opt+", '"+src+"', /mnt/x]", 1)
	}
	mount := func(src string) string {
		return dockerBase + "target: docker\ndocker:\n  mounts: [{type: bind, source: '" + src + "', target: /mnt/x}]\n"
	}
	for _, tc := range []struct {
		name, yaml string
		warn       string // "" = no warning
	}{
		{"host root", bind("--ro-bind", "/"), "the host's root filesystem"},
		{"docker socket", bind("--bind", "/var/run/docker.sock"), "Docker engine's API socket"},
		{"docker socket under /run", mount("/run/docker.sock"), "Docker engine's API socket"},
		{"containerd", bind("--ro-bind-try", "/run/containerd/containerd.sock"), "containerd"},
		{"podman", mount("/run/podman"), "podman"},
		{"docker data root", bind("--bind", "/var/lib/docker/volumes"), "Docker's data root"},
		{"host proc", bind("--ro-bind", "/proc"), "the host's /proc"},
		{"host sys", bind("--dev-bind", "/sys/fs/cgroup"), "the host's /sys"},
		{"a user's home", bind("--ro-bind", "/home/alice/.aws"), "home folders"},
		{"root's home", mount("/root"), "root's home"},
		{"host etc", mount("/etc/"), "the host's configuration"},
		{"folder holding the sockets", bind("--ro-bind", "/run"), "a folder holding /run/docker.sock, /run/containerd"},
		{"folder holding docker's data", mount("/var"), "/var/lib/docker"},
		{"one harmless file of etc", bind("--ro-bind", "/etc/resolv.conf"), ""},
		{"usr", bind("--ro-bind", "/usr"), ""},
		{"a place of the harness", bind("--bind", "{{place:engine}}/docker.sock"), ""},
		{"a profile file", bind("--ro-bind", "./hosts"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := kinds.Load(writeProfile(t, tc.yaml, map[string]string{"hosts": "127.0.0.1 x\n"}))
			if err != nil {
				t.Fatalf("Load() = %v: a dangerous bind is a warning, not an error", err)
			}
			ws := p.Warnings()
			switch {
			case tc.warn == "" && len(ws) != 0:
				t.Fatalf("warnings %v, want none", ws)
			case tc.warn == "":
			case len(ws) != 1 || !strings.Contains(ws[0].Msg, tc.warn) || ws[0].Line == 0 || ws[0].Field == "":
				t.Fatalf("warnings %v, want one with field and line saying %q", ws, tc.warn)
			}
		})
	}
}

func planOf(t *testing.T, p *profile.Profile) profile.Plan {
	t.Helper()
	return profile.NewPlan(p, []string{"external-callback"}, true)
}

func control(t *testing.T, pl profile.Plan, name string) profile.Control {
	t.Helper()
	for _, c := range pl.Controls {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("plan has no control %q: %+v", name, pl.Controls)
	return profile.Control{}
}

// The plan says where each control lives and whether root in the guest
// can reach it, per path.
func TestPlanSaysWhereEachControlLives(t *testing.T) {
	normal, breach := string(targets.PathNormal), string(targets.PathBreach)
	shipped := func(name string) *profile.Profile {
		p, err := kinds.LoadFS(profiles.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	netAdmin := strings.Replace(dockerBase, "network: lab", "network: lab\negress: x.nft", 1) + "target: docker\ndocker: {cap_add: [NET_ADMIN]}\n"
	netstack := strings.Replace(dockerBase, "network: lab", "network: lab\negress: x.nft", 1) + "target: gvisor\n"
	load := func(y string) *profile.Profile {
		p, err := kinds.Load(writeProfile(t, y, map[string]string{"x.nft": "table inet x {}\n"}))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		p       *profile.Profile
		control string
		normal  string // reach on each path; "" = no reach (none, or does not apply)
		breach  string
		why     string
	}{
		{"bwrap ruleset: the host's user namespace owns the session namespace", shipped("bwrap-hardened.yaml"), "egress ruleset", "outside", "outside", "user namespace of its own"},
		{"docker with NET_ADMIN: root can flush the ruleset", load(netAdmin), "egress ruleset", "outside", "inside", "CAP_NET_ADMIN"},
		{"gvisor netstack: the ruleset does not apply", load(netstack), "egress ruleset", "", "", "does not apply"},
		{"gvisor hostinet: outside", shipped("gvisor-hardened.yaml"), "egress ruleset", "outside", "outside", "gVisor's own kernel"},
		{"leaky docker root: network within reach", shipped("docker-leaky.yaml"), "network namespace, addresses and routes", "inside", "inside", "CAP_NET_ADMIN"},
		{"leaky bwrap root keeps SYS_ADMIN: binds can be remounted", shipped("bwrap-leaky.yaml"), "mounts (binds and read-only flags)", "outside", "inside", "remounted read-write"},
		{"hardened bwrap root has no capabilities", shipped("bwrap-hardened.yaml"), "mounts (binds and read-only flags)", "outside", "outside", "no CAP_SYS_ADMIN"},
		{"runsc ignores the container's seccomp profile by default", shipped("gvisor-hardened.yaml"), "seccomp filter", "", "", "only with --oci-seccomp"},
		{"runsc --oci-seccomp installs it", load(dockerBase + "target: gvisor\ndocker: {runtime_flags: [--oci-seccomp=true]}\n"), "seccomp filter", "outside", "outside", "never removes"},
		{"the resolver is advisory", shipped("bwrap-hardened.yaml"), "resolver", "inside", "inside", "advisory"},
		{"the stop is the harness's", shipped("bwrap-leaky.yaml"), "stop", "outside", "outside", "scope process"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := planOf(t, tc.p)
			c := control(t, pl, tc.control)
			if c.Reach[normal] != tc.normal || c.Reach[breach] != tc.breach || !strings.Contains(c.Why, tc.why) || c.Where == "" {
				t.Fatalf("%s: reach %v, where %q, why %q; want normal %q, assume-breach %q, why containing %q",
					tc.control, c.Reach, c.Where, c.Why, tc.normal, tc.breach, tc.why)
			}
			// A ruleset out of force or within reach is also a warning.
			egressWarned := false
			for _, w := range pl.Warnings {
				egressWarned = egressWarned || w.Field == "egress"
			}
			if want := tc.control == "egress ruleset" && tc.breach != "outside"; egressWarned != want {
				t.Fatalf("egress warning %v, want %v: %v", egressWarned, want, pl.Warnings)
			}
		})
	}
}

// The plan never prints a secret: references stay references, and a
// literal under a credential's name is withheld.
func TestPlanPrintsNoSecretValues(t *testing.T) {
	y := base + "env:\n  GITHUB_TOKEN: '{{secret:github-token}}'\n  API_KEY: sk-live-0123456789abcdef\n  HOME: /home/agent\n"
	p, err := kinds.Load(writeProfile(t, y, nil))
	if err != nil {
		t.Fatal(err)
	}
	pl := planOf(t, p)
	var text bytes.Buffer
	if err := pl.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(pl)
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{text.String(), string(js)} {
		if strings.Contains(out, "sk-live") {
			t.Fatalf("the plan prints a literal credential:\n%s", out)
		}
		for _, want := range []string{"{{secret:github-token}}", "/home/agent", "not printed"} {
			if !strings.Contains(out, want) {
				t.Fatalf("the plan lacks %q:\n%s", want, out)
			}
		}
	}
	if pl.Env["API_KEY"] == "" || pl.Gates[0] != "external-callback" || pl.Paths[1].Path != string(targets.PathBreach) {
		t.Fatalf("plan %+v", pl)
	}
}
