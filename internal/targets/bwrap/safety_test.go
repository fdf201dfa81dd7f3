package bwrap_test

import (
	"context"
	"errors"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/targets/bwrap"
	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
	"github.com/gatehouse-dev/gatehouse/targets/targettest"
)

// A sandbox must never share the machine's own network namespace.
func TestStartRefusesMachineNetwork(t *testing.T) {
	hardened := shipped(t, profiles.Hardened) // no --unshare-net: relies on the session netns
	offline := shipped(t, profiles.Offline)
	for _, tc := range []struct {
		name string
		p    *profile.Profile
		net  targets.Network
		want error
	}{
		{"no netns and no unshare-net", hardened, targets.Network{}, bwrap.ErrSharedNetwork},
		{"netns is our own", hardened, targets.Network{NetnsPath: "/proc/self/ns/net"}, bwrap.ErrSharedNetwork},
		{"lab profile without netns", withNetwork(t, offline, "network: lab"), targets.Network{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			s, err := bwrap.New(bwrap.Options{Profile: tc.p, Root: root, Init: probetest.Build(t)}).Start(context.Background(),
				targets.Spec{Name: "refuse", Path: targets.PathNormal, Network: tc.net})
			if err == nil {
				s.Stop(context.Background())
				t.Fatal("Start succeeded; want a refusal")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Start error %v, want %v", err, tc.want)
			}
			if left, _ := os.ReadDir(root); len(left) != 0 {
				t.Fatalf("a refused Start left %d entries in the staging root", len(left))
			}
		})
	}
}

// withNetwork reloads a shipped profile with one line replaced.
func withNetwork(t *testing.T, p *profile.Profile, networkLine string) *profile.Profile {
	t.Helper()
	data, _ := p.File(p.Source())
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	out := strings.Replace(string(data), "network: none", networkLine, 1)
	if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	q, err := kinds.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestCopyInOutsideGatehouseIsUnsupported(t *testing.T) {
	needSandbox(t)
	s, _ := startSession(t, shipped(t, profiles.Hardened), targets.Spec{Name: "cp", Path: targets.PathNormal, Network: newNetns(t)})
	err := s.CopyIn(context.Background(), "/etc/passwd", strings.NewReader("x"), 0o644)
	if !errors.Is(err, targets.ErrUnsupported) {
		t.Fatalf("CopyIn(/etc/passwd) = %v, want ErrUnsupported", err)
	}
	err = s.CopyIn(context.Background(), "/gatehouse/../etc/passwd", strings.NewReader("x"), 0o644)
	if !errors.Is(err, targets.ErrUnsupported) {
		t.Fatalf("CopyIn(/gatehouse/../etc/passwd) = %v, want ErrUnsupported", err)
	}
}

// The sandbox can write /gatehouse/work: a FIFO or a link it plants at the
// name the harness writes next must neither block the harness's CopyIn
// (as host root) nor turn it into a write elsewhere on the host.
func TestCopyInSurvivesPlantedEntries(t *testing.T) {
	needSandbox(t)
	for _, path := range []targets.Path{targets.PathNormal, targets.PathBreach} {
		t.Run(string(path), func(t *testing.T) {
			s, _ := startSession(t, shipped(t, profiles.Hardened), targets.Spec{Name: "ln", Path: path, Network: newNetns(t)})
			targettest.PlantedCopyIn(t, s)
		})
	}
}

func TestInspectReadsBackArgvAndRuleset(t *testing.T) {
	needSandbox(t)
	n := newNetns(t)
	s, _ := startSession(t, shipped(t, profiles.Hardened), targets.Spec{Name: "insp", Path: targets.PathNormal, Network: n})
	cfg, err := s.Inspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cfg.Runtime, "bubblewrap ") {
		t.Fatalf("Runtime = %q", cfg.Runtime)
	}
	if cfg.Argv[0] != "bwrap" || cfg.Argv[len(cfg.Argv)-1] != "--" || !strings.Contains(cfg.Facts["launch"], n.NetnsPath) {
		t.Fatalf("Argv = %q, launch %q", cfg.Argv, cfg.Facts["launch"])
	}
	if i := slices.Index(cfg.Argv, "--uid"); i < 0 || cfg.Argv[i+1] != "1000" {
		t.Fatalf("Argv lacks --uid 1000: %q", cfg.Argv)
	}
	rules := cfg.Facts["nft_ruleset"]
	for _, want := range []string{"table inet gatehouse_egress", "policy drop", "203.0.113.100"} {
		if !strings.Contains(rules, want) {
			t.Fatalf("nft_ruleset lacks %q:\n%s", want, rules)
		}
	}
	if cfg.Facts["profile_digest"] == "" {
		t.Fatal("no profile_digest fact")
	}
}

// A profile that unshares the network and then shares it back is refused,
// and a session given no namespace runs in an empty one of ours, never in
// the machine's, even when its arguments claim isolation.
func TestNoNetworkMeansAnEmptyNamespaceOfOurs(t *testing.T) {
	needSandbox(t)
	offline := shipped(t, profiles.Offline)
	shareBack := withArgs(t, offline, "--share-net")
	if s, err := bwrap.New(bwrap.Options{Profile: shareBack, Root: t.TempDir(), Init: probetest.Build(t)}).Start(context.Background(),
		targets.Spec{Name: "share", Path: targets.PathNormal}); err == nil {
		s.Stop(context.Background())
		t.Fatal("--unshare-net followed by --share-net was accepted")
	}
	s, _ := startSession(t, offline, targets.Spec{Name: "iso", Path: targets.PathNormal})
	cfg, err := s.Inspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	netns := cfg.Facts["netns"]
	if !strings.HasPrefix(netns, "/run/netns/gh-n") {
		t.Fatalf("session namespace %q is not an isolated one of ours", netns)
	}
	if same, _ := sameFile(netns, "/proc/self/ns/net"); same {
		t.Fatal("the isolated namespace is the machine's own")
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(netns); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("isolated namespace %s left after Stop (%v)", netns, err)
	}
}

func withArgs(t *testing.T, p *profile.Profile, extra ...string) *profile.Profile {
	t.Helper()
	data, _ := p.File(p.Source())
	dir := t.TempDir()
	var add strings.Builder
	for _, a := range extra {
		add.WriteString("    - " + a + "\n")
	}
	// Right after --unshare-net, so the extra arguments come later and win.
	out := strings.Replace(string(data), "    - --unshare-net\n", "    - --unshare-net\n"+add.String(), 1)
	if out == string(data) {
		t.Fatal("profile has no --unshare-net line to extend")
	}
	file := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	q, err := kinds.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func sameFile(a, b string) (bool, error) {
	sa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	sb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(sa, sb), nil
}
