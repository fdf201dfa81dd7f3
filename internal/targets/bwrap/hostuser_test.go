package bwrap_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/targets/bwrap"
	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
)

// The sandbox's user on the host, as the kernel says, is this run's own
// unprivileged uid on the normal path and root only on the assume-breach
// path. A root-owned, owner-only file in a folder a profile binds (a TLS
// private key under /etc/ssl) is then unreadable on the normal path, as
// to any ordinary user; when bubblewrap ran as root it was readable there
// ("uid 1000" inside was host uid 0).
func TestSandboxUserOnTheHost(t *testing.T) {
	needSandbox(t)
	keys, err := os.MkdirTemp("", "gh-ssl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(keys) })
	if err := os.Chmod(keys, 0o755); err != nil { // like /etc/ssl/private's parents
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(keys, "host.key"), []byte("HOST PRIVATE KEY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := withBind(t, shipped(t, profiles.Hardened), keys, "/etc/ssl/private")
	run := strconv.Itoa(bwrap.RunUIDBase + os.Getpid())
	for _, tc := range []struct {
		path      targets.Path
		uid, map_ string
		kind      string
		readable  bool
	}{
		{targets.PathNormal, run, "1000 " + run + " 1", "unprivileged", false},
		{targets.PathBreach, "0", "0 0 1", "host root", true},
	} {
		t.Run(string(tc.path), func(t *testing.T) {
			s, _ := startSession(t, p, targets.Spec{Name: "hostuser", Path: tc.path, Network: newNetns(t)})
			cfg, err := s.Inspect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			f := cfg.Facts
			if f["outside.uid"] != tc.uid || f["outside.gid"] != tc.uid || f["outside.uid_map"] != tc.map_ || f["outside.gid_map"] != tc.map_ {
				t.Fatalf("read back: uid %q gid %q uid_map %q gid_map %q; want uid %s, map %q", f["outside.uid"], f["outside.gid"], f["outside.uid_map"], f["outside.gid_map"], tc.uid, tc.map_)
			}
			if !strings.Contains(f["host_user"], tc.kind) {
				t.Fatalf("host_user %q does not say %q", f["host_user"], tc.kind)
			}
			got := shOut(t, s, `if read -r l < /etc/ssl/private/host.key 2>/dev/null; then echo "read: $l"; else echo refused; fi`)
			if read := strings.HasPrefix(got, "read:"); read != tc.readable {
				t.Fatalf("the host's root-only key, bound in: %q (readable %v, want %v)", got, read, tc.readable)
			}
		})
	}
}

// On the normal path what the sandbox is given to write is its user's:
// the work folder, a folder the harness copies in there later (an agent's
// home), and its storage place.
func TestNormalPathWritesItsOwnFolders(t *testing.T) {
	needSandbox(t)
	s, _ := startSession(t, shipped(t, profiles.Hardened), targets.Spec{Name: "own", Path: targets.PathNormal, Network: newNetns(t)})
	if err := s.CopyIn(context.Background(), "/gatehouse/work/gh-home-1/.gatehouse", strings.NewReader(""), 0o644); err != nil {
		t.Fatal(err)
	}
	got := shOut(t, s, `for d in /gatehouse/work /gatehouse/work/gh-home-1 /workspace; do if echo x > $d/new 2>/dev/null; then echo "$d ok"; else echo "$d refused"; fi; done`)
	if got != "/gatehouse/work ok\n/gatehouse/work/gh-home-1 ok\n/workspace ok\n" {
		t.Fatalf("writes: %q", got)
	}
}

// withBind reloads a shipped profile (with its ruleset) with one more
// read-only bind after --clearenv.
func withBind(t *testing.T, p *profile.Profile, src, dst string) *profile.Profile {
	t.Helper()
	dir := t.TempDir()
	for name, data := range p.Files() {
		if name == p.Source() {
			data = []byte(strings.Replace(string(data), "    - --clearenv\n", "    - --clearenv\n    - --ro-bind\n    - "+src+"\n    - "+dst+"\n", 1))
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	q, err := kinds.Load(filepath.Join(dir, p.Source()))
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// Handing the places to the sandbox's user never hands over a file that
// has another name: a hard link in a place to a root-only file elsewhere
// stays root's, and so does the file.
func TestHandoverSkipsHardLinks(t *testing.T) {
	needSandbox(t)
	p := shipped(t, profiles.Leaky) // binds {{place:home}} read-only: handed over whole
	dir := t.TempDir()
	secret := filepath.Join(dir, "root-only")
	if err := os.WriteFile(secret, []byte("root's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(home, "agent"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(home, "agent", "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "agent", "own"), []byte("agent's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	startSession(t, p, targets.Spec{Name: "links", Path: targets.PathNormal, Network: newNetns(t), Places: map[string]string{"home": home}})
	run := uint32(bwrap.RunUIDBase + os.Getpid())
	for name, want := range map[string]uint32{secret: 0, filepath.Join(home, "agent", "own"): run} {
		var st syscall.Stat_t
		if err := syscall.Stat(name, &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != want {
			t.Errorf("%s owned by %d, want %d", name, st.Uid, want)
		}
	}
}

// Where an unprivileged user cannot make a user namespace, the normal path
// is refused with the kernel's settings, never run as root instead. The
// bubblewrap here is a stand-in that answers --version and fails as
// bubblewrap does when the kernel refuses.
func TestNormalPathRefusesWithoutUserNamespaces(t *testing.T) {
	needSandbox(t)
	dir, err := os.MkdirTemp("", "gh-fakebwrap-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(dir, "bwrap")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'bubblewrap 0.8.0'; exit 0; fi\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p := shipped(t, profiles.Hardened)
	tgt := bwrap.New(bwrap.Options{Profile: p, Root: t.TempDir(), Init: probetest.Build(t), Bwrap: fake})
	s, err := tgt.Start(context.Background(), withPlaces(t, p, targets.Spec{Name: "nouserns", Path: targets.PathNormal, Network: newNetns(t)}))
	if err == nil {
		s.Stop(context.Background())
		t.Fatal("Start succeeded with a bubblewrap that cannot make a user namespace")
	}
	if !errors.Is(err, bwrap.ErrNoUserNamespaces) || !strings.Contains(err.Error(), "max_user_namespaces") || !strings.Contains(err.Error(), "No permissions") {
		t.Fatalf("Start: %v; want ErrNoUserNamespaces with bubblewrap's words and the kernel's settings", err)
	}
}
