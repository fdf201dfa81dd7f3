package doctor_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/doctor"
)

// machine is a fake machine: files, commands on PATH with their output,
// and the kernel probes' answers.
type machine struct {
	euid    int
	files   map[string]string
	bins    map[string]string // name → output of any invocation
	failing map[string]bool   // commands ("name" or "name firstarg") that exit non-zero
	monitor error
	audit   error
	agents  []doctor.Agent
}

func (m machine) probes() doctor.Probes {
	return doctor.Probes{
		Euid: func() int { return m.euid },
		ReadFile: func(name string) ([]byte, error) {
			if s, ok := m.files[name]; ok {
				return []byte(s), nil
			}
			return nil, fs.ErrNotExist
		},
		Stat: func(name string) error {
			if _, ok := m.files[name]; ok {
				return nil
			}
			return fs.ErrNotExist
		},
		LookPath: func(file string) (string, error) {
			if _, ok := m.bins[file]; ok {
				return "/usr/bin/" + file, nil
			}
			return "", errors.New("not found")
		},
		Output: func(_ context.Context, name string, args ...string) (string, error) {
			base := name[strings.LastIndexByte(name, '/')+1:]
			if m.failing[base] || (len(args) > 0 && m.failing[base+" "+args[0]]) {
				return "Operation not permitted\n", errors.New("exit status 1")
			}
			return m.bins[base], nil
		},
		Monitor: func(context.Context) error { return m.monitor },
		Audit:   func() error { return m.audit },
		Agents:  func() []doctor.Agent { return m.agents },
		Getenv:  func(string) string { return "" },
	}
}

const cgroup2Line = "35 25 0:30 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw\n"

// healthy is a machine where everything is in place.
func healthy() machine {
	return machine{
		files: map[string]string{
			"/proc/sys/user/max_user_namespaces":                              "15000\n",
			"/proc/self/mountinfo":                                            "22 1 8:1 / / rw - ext4 /dev/vda rw\n" + cgroup2Line,
			"/sys/kernel/btf/vmlinux":                                         "",
			"/var/cache/gatehouse/cosign-" + doctor.CosignVersion + "/cosign": "",
		},
		bins: map[string]string{
			"unshare": "", "setpriv": "", "bwrap": "bubblewrap 0.8.0\n", "nft": "nftables v1.0.6\n", "ip": "ip utility, iproute2-6.1.0\n",
			"nsenter": "nsenter from util-linux 2.38.1\n", "dockerd": "Docker version 20.10.24\n", "runc": "runc version 1.1.5\n",
			"runsc": "runsc version " + doctor.RunscVersion + "\nspec: 1.1.0\n", "firejail": "firejail version 0.9.72\n",
			"cosign": "GitVersion:    " + doctor.CosignVersion + "\nGitCommit: x\n",
		},
		agents: []doctor.Agent{{Name: "codex", Pinned: "0.171.0", Installed: "0.171.0"}, {Name: "srt", Pinned: "0.0.83", Installed: "0.0.83"}},
	}
}

func find(t *testing.T, r doctor.Report, name string) doctor.Check {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q in %+v", name, r.Checks)
	return doctor.Check{}
}

func TestChecks(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(m *machine)
		check  string
		status doctor.Status
		fix    string // a substring of the fix
		ready  bool   // bwrap runs still work
	}{
		{"healthy", func(*machine) {}, "bubblewrap", doctor.OK, "", true},
		{"not root", func(m *machine) { m.euid = 1000 }, "root", doctor.Unavailable, "sudo", false},
		{"no bwrap", func(m *machine) { delete(m.bins, "bwrap") }, "bubblewrap", doctor.Missing, "apt-get install bubblewrap", false},
		{"no nft", func(m *machine) { delete(m.bins, "nft") }, "nftables", doctor.Missing, "apt-get install nftables", false},
		{"no ip", func(m *machine) { delete(m.bins, "ip") }, "iproute2", doctor.Missing, "apt-get install iproute2", false},
		{"user namespaces off", func(m *machine) { m.files["/proc/sys/user/max_user_namespaces"] = "0\n" }, "user-namespaces", doctor.Unavailable, "sysctl -w user.max_user_namespaces", false},
		{"unshare refused", func(m *machine) { m.failing = map[string]bool{"unshare --net": true} }, "network-namespaces", doctor.Unavailable, "CONFIG_NET_NS", false},
		{"user namespaces refused", func(m *machine) { m.failing = map[string]bool{"unshare --user": true} }, "user-namespaces", doctor.Unavailable, "CONFIG_USER_NS", false},
		{"unprivileged user namespaces refused", func(m *machine) { m.failing = map[string]bool{"setpriv --reuid=65534": true} }, "user-namespaces", doctor.Unavailable, "unprivileged user namespaces", false},
		{"unprivileged user namespaces off", func(m *machine) { m.files["/proc/sys/kernel/unprivileged_userns_clone"] = "0\n" }, "user-namespaces", doctor.Unavailable, "kernel.unprivileged_userns_clone=1", false},
		{"no cgroup2", func(m *machine) { m.files["/proc/self/mountinfo"] = "22 1 8:1 / / rw - ext4 /dev/vda rw\n" }, "cgroup-v2", doctor.Missing, "mount -t cgroup2", false},
		{"no dockerd", func(m *machine) { delete(m.bins, "dockerd") }, "dockerd", doctor.Missing, "apt-get install docker.io", true},
		{"old runsc", func(m *machine) { m.bins["runsc"] = "runsc version release-20230101.0\n" }, "runsc", doctor.WrongVersion, "make tools", true},
		{"no runsc", func(m *machine) { delete(m.bins, "runsc") }, "runsc", doctor.Missing, "scripts/runsc.sh", true},
		{"no cosign", func(m *machine) {
			delete(m.files, "/var/cache/gatehouse/cosign-"+doctor.CosignVersion+"/cosign")
			delete(m.bins, "cosign")
		}, "cosign", doctor.Missing, "make tools", true},
		{"other cosign on PATH", func(m *machine) {
			delete(m.files, "/var/cache/gatehouse/cosign-"+doctor.CosignVersion+"/cosign")
			m.bins["cosign"] = "GitVersion: v2.2.0\n"
		}, "cosign", doctor.WrongVersion, "make tools", true},
		{"no BTF", func(m *machine) { delete(m.files, "/sys/kernel/btf/vmlinux") }, "kernel-btf", doctor.Missing, "CONFIG_DEBUG_INFO_BTF", true},
		{"monitor refused", func(m *machine) { m.monitor = errors.New("load program: operation not permitted") }, "bpf-monitor", doctor.Unavailable, "CONFIG_BPF_SYSCALL", true},
		{"audit owned", func(m *machine) { m.audit = errors.New("auditd (pid 12) owns audit") }, "audit", doctor.Unavailable, "systemctl stop auditd", true},
		{"agent missing", func(m *machine) {
			m.agents[0] = doctor.Agent{Name: "codex", Pinned: "0.171.0", Err: errors.New("not installed")}
		}, "agent codex", doctor.Missing, "gatehouse agents install codex", true},
		{"agent other version", func(m *machine) { m.agents[1].Installed = "0.0.1" }, "agent srt", doctor.WrongVersion, "gatehouse agents install srt", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := healthy()
			tt.break_(&m)
			r := doctor.Run(context.Background(), m.probes())
			c := find(t, r, tt.check)
			if c.Status != tt.status || !strings.Contains(c.Fix, tt.fix) {
				t.Errorf("%s: %s, fix %q; want %s with %q", tt.check, c.Status, c.Fix, tt.status, tt.fix)
			}
			if tt.status == doctor.OK && c.Fix != "" {
				t.Errorf("%s is ok but says to fix: %q", tt.check, c.Fix)
			}
			if r.BwrapReady != tt.ready {
				t.Errorf("bwrap ready %v, want %v", r.BwrapReady, tt.ready)
			}
			// Only the broken thing is reported as not ok.
			for _, o := range r.Checks {
				if o.Name != tt.check && o.Status != doctor.OK {
					t.Errorf("%s also reported %s: %s", o.Name, o.Status, o.Line())
				}
			}
		})
	}
}

// Needed runs only what a target needs: a bwrap run never loads the
// monitor's program or asks about dockerd.
func TestNeededForBwrap(t *testing.T) {
	m := healthy()
	m.monitor = errors.New("must not be probed")
	delete(m.bins, "dockerd")
	for _, c := range doctor.Needed(context.Background(), m.probes(), "bwrap") {
		if c.Status != doctor.OK {
			t.Errorf("%s", c.Line())
		}
		if c.Name == "bpf-monitor" || c.Name == "dockerd" {
			t.Errorf("bwrap does not need %s", c.Name)
		}
	}
}

// The pins are the ones `make tools` builds.
func TestPinsMatchScripts(t *testing.T) {
	for script, pin := range map[string]string{"../../scripts/runsc.sh": doctor.RunscVersion, "../../scripts/cosign.sh": doctor.CosignVersion} {
		b, err := os.ReadFile(script)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`_VERSION:-([^}]+)\}`).FindSubmatch(b)
		if m == nil || string(m[1]) != pin {
			t.Errorf("%s pins %q, doctor expects %q", script, m, pin)
		}
	}
}
