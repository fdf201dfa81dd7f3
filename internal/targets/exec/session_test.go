package exec_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
	"github.com/gatehouse-dev/gatehouse/targets/targettest"
)

func run(t *testing.T, s targets.Session, script string, env map[string]string) string {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.Exec(ctx, targets.Command{Args: []string{"/bin/sh", "-c", script}, Env: env, Stdout: &out, Stderr: &errb})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%q: exit %d, err %v, stderr %q", script, res.ExitCode, err, errb.String())
	}
	return out.String()
}

// What the wrapper and its commands get: the wrapper really ran, the
// path's identity, the session's resolver, the work folder writable, and
// none of the harness's own environment.
func TestWrapperView(t *testing.T) {
	needRoot(t)
	t.Setenv("GH_HARNESS_SECRET", "must-not-leak")
	for _, tc := range []struct {
		path targets.Path
		uid  string
	}{{targets.PathNormal, "1000"}, {targets.PathBreach, "0"}} {
		t.Run(string(tc.path), func(t *testing.T) {
			p := loadTestdata(t, "exec-sh.yaml")
			s := startSession(t, p, targets.Spec{Name: "view", Path: tc.path, Network: newNetns(t)})
			got := run(t, s, `printf '%s|%s|%s|' "$GH_WRAPPED" "$(id -u)" "$GH_HARNESS_SECRET"; cat /etc/resolv.conf; touch /gatehouse/work/w && echo writable`, nil)
			want := "yes|" + tc.uid + "||nameserver 203.0.113.53\nwritable\n"
			if got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
}

// Inspect records the wrapper's version, its exact argv, the digest of
// its policy file, and the init's namespaces read from the host: the
// network one is the session's.
func TestInspect(t *testing.T) {
	needRoot(t)
	p := loadTestdata(t, "exec-sh.yaml")
	nw := newNetns(t)
	s := startSession(t, p, targets.Spec{Name: "inspect", Path: targets.PathNormal, Network: nw,
		Files: map[string]targets.File{wire.SandboxPath: {HostPath: probetest.Build(t), Mode: 0o755}}})
	cfg, err := s.Inspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Target != "exec" || cfg.Runtime != "exec-sh 1" {
		t.Errorf("target %q runtime %q", cfg.Target, cfg.Runtime)
	}
	if want := []string{"/bin/sh", "/gatehouse/.policy/wrapper", "/gatehouse/.init", "init", "0"}; strings.Join(cfg.Argv, " ") != strings.Join(want, " ") {
		t.Errorf("argv %q, want %q", cfg.Argv, want)
	}
	if d := cfg.Facts["policy.wrapper"]; !strings.HasPrefix(d, "sha256:") || len(d) != 71 {
		t.Errorf("policy.wrapper = %q", d)
	}
	netns, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if out := cfg.Facts["outside.ns.net"]; out == "" || out == netns {
		t.Errorf("outside.ns.net = %q (the machine's is %q); error %q", out, netns, cfg.Facts["outside.ns.error"])
	}
	if cfg.Facts["uid"] != "1000" || cfg.Facts["ns.net"] != cfg.Facts["outside.ns.net"] {
		t.Errorf("probe facts uid %q ns.net %q, outside %q", cfg.Facts["uid"], cfg.Facts["ns.net"], cfg.Facts["outside.ns.net"])
	}
}

// Stop leaves nothing: no process in the session namespace, no staging
// folder, no cgroup; a second Stop is fine.
func TestStopLeavesNothing(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name, profile string
		firejail      bool
	}{{"exec-sh", "exec-sh.yaml", false}, {"firejail", profiles.FirejailHardened, true}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.firejail {
				needFirejail(t)
			}
			p := loadTestdata(t, "exec-sh.yaml")
			if tc.firejail {
				p = shipped(t, tc.profile)
			}
			nw := newNetns(t)
			ctx := context.Background()
			s, err := newTarget(t, p).Start(ctx, withPlaces(t, targets.Spec{Name: "stop", Path: targets.PathNormal, Network: nw}))
			if err != nil {
				t.Fatal(err)
			}
			// A background process that left the command's process group.
			run(t, s, `setsid sh -c 'while :; do sleep 1; done' >/dev/null 2>&1 </dev/null &`, nil)
			cfg, err := s.Inspect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// The background process may still be between setsid's fork
			// and its exec when the command returns.
			var pids []int
			for end := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				pids, err = s.(targets.ProcessLister).Processes(ctx)
				if err != nil || len(pids) >= 3 || time.Now().After(end) {
					break
				}
			}
			if err != nil || len(pids) < 3 {
				t.Fatalf("Processes = %v, %v; want the wrapper, the init and the background process", pids, err)
			}
			if err := s.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			if err := s.Stop(ctx); err != nil {
				t.Fatalf("second Stop: %v", err)
			}
			if out, _ := exec.Command("ip", "netns", "pids", nw.NetnsName).Output(); strings.TrimSpace(string(out)) != "" {
				var what []string
				for _, pid := range strings.Fields(string(out)) {
					b, _ := os.ReadFile("/proc/" + pid + "/status")
					var st []string
					for _, l := range strings.Split(string(b), "\n") {
						if strings.HasPrefix(l, "Name:") || strings.HasPrefix(l, "State:") || strings.HasPrefix(l, "PPid:") {
							st = append(st, strings.Join(strings.Fields(l), " "))
						}
					}
					what = append(what, pid+" ("+strings.Join(st, ", ")+")")
				}
				t.Errorf("processes left in the session namespace: %s", strings.Join(what, "; "))
			}
			for _, c := range cfg.Created {
				if _, err := os.Stat(c); !os.IsNotExist(err) {
					t.Errorf("%s still exists after Stop", c)
				}
			}
			for _, pid := range pids {
				if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
					t.Errorf("process %d of the session still exists (a zombie counts)", pid)
				}
			}
			if left, _ := s.(targets.ProcessLister).Processes(ctx); len(left) != 0 {
				t.Errorf("the session's cgroup still lists %v", left)
			}
		})
	}
}

// The wrapper's commands can write /gatehouse/work: a FIFO or a link they
// plant at the name the harness writes next must neither block the
// harness's CopyIn (as host root) nor turn it into a write elsewhere on the
// host.
func TestCopyInSurvivesPlantedEntries(t *testing.T) {
	needRoot(t)
	for _, path := range []targets.Path{targets.PathNormal, targets.PathBreach} {
		t.Run(string(path), func(t *testing.T) {
			s := startSession(t, loadTestdata(t, "exec-sh.yaml"), targets.Spec{Name: "plant", Path: path, Network: newNetns(t)})
			targettest.PlantedCopyIn(t, s)
		})
	}
	t.Run("firejail", func(t *testing.T) {
		needFirejail(t)
		s := startSession(t, shipped(t, "firejail-hardened.yaml"), targets.Spec{Name: "plant", Path: targets.PathNormal, Network: newNetns(t)})
		targettest.PlantedCopyIn(t, s)
	})
}
