package main

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// fakeDockerd is a container engine API on a unix socket in a test folder,
// answering /_ping and /version the way dockerd 20.10 does. No dockerd
// runs on the host by default; this one is real enough for the protocol
// and records what it was asked, so the test can check that nothing but
// reads ever reached it.
type fakeDockerd struct {
	path string
	mu   sync.Mutex
	asks []string
}

func startFakeDockerd(t *testing.T, engine bool) *fakeDockerd {
	t.Helper()
	dir := t.TempDir()
	openToUsers(t, dir)
	d := &fakeDockerd{path: filepath.Join(dir, "docker.sock")}
	ln, err := net.Listen("unix", d.path)
	if err != nil {
		t.Fatal(err)
	}
	// Usable by the sandbox's unprivileged user on the normal path, as the
	// host's docker.sock is to a member of the docker group.
	if err := os.Chmod(d.path, 0o666); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		d.asks = append(d.asks, r.Method+" "+r.URL.Path)
		d.mu.Unlock()
		if !engine { // some other local service: not an engine
			w.Write([]byte("hello from a helper\n"))
			return
		}
		w.Header().Set("Api-Version", "1.41")
		w.Header().Set("Docker-Experimental", "false")
		w.Header().Set("Ostype", "linux")
		w.Header().Set("Server", "Docker/20.10.24 (linux)")
		switch r.URL.Path {
		case "/_ping":
			w.Write([]byte("OK"))
		case "/version":
			w.Write([]byte(`{"Version":"20.10.24","ApiVersion":"1.41","MinAPIVersion":"1.12","Os":"linux","Arch":"amd64"}`))
		default:
			http.Error(w, `{"message":"page not found"}`, http.StatusNotFound)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return d
}

// onlyReads fails the test if the engine was asked anything but GET.
func (d *fakeDockerd) onlyReads(t *testing.T) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, a := range d.asks {
		if !strings.HasPrefix(a, "GET ") {
			t.Errorf("the engine was asked %q: only reads are allowed", a)
		}
	}
}

// The real engine socket bound in: host-access FAILs, proven by the
// engine's own answer inside, the socket's device:inode matching the host
// socket, and the harness's own read-only question to it. A helper socket
// that is not an engine, bound the same way, is not host access.
func TestOneMistakeEngineSocket(t *testing.T) {
	needSandbox(t)
	t.Run("engine socket", func(t *testing.T) {
		d := startFakeDockerd(t, true)
		p := oneMistake(t, addArgs("the container engine's socket, for 'docker build'", "--bind", d.path, "/var/run/docker.sock"))
		checkGates(t, p, map[string]want{
			"long-lived-secret": {evidence.Pass, ""},
			"host-access": {evidence.Fail, "a container engine API answered at /var/run/docker.sock: docker version=20.10.24,api=1.41; it is the host's socket " +
				d.path + " (same device:inode "},
			"foreign-storage": {evidence.Pass, ""},
		})
		d.onlyReads(t)
		d.mu.Lock()
		defer d.mu.Unlock()
		// Asked from inside by the probe and from outside by the harness.
		if n := strings.Count(strings.Join(d.asks, ","), "GET /_ping"); n < 3 {
			t.Errorf("the engine heard %d pings (%q): want the probe's on both paths and the harness's", n, d.asks)
		}
	})
	t.Run("harmless: a helper socket that is no engine", func(t *testing.T) {
		d := startFakeDockerd(t, false)
		p := oneMistake(t, addArgs("a local helper's socket", "--bind", d.path, "/run/helper/helper.sock"))
		checkGates(t, p, map[string]want{
			"long-lived-secret": {evidence.Pass, ""},
			"host-access":       {evidence.Pass, "no container engine API answered inside"},
			"foreign-storage":   {evidence.Pass, ""},
		})
		d.onlyReads(t)
	})
}

// A host user's home bound in: host-access FAILs by device:inode (the
// harness stats every /home/* itself). The test makes the home (empty but
// for a shell profile) so the run does not depend on this machine's real
// homes, and removes it. A harmless read-only bind of host CA certificates
// (no home, no root) still PASSes everything.
func TestOneMistakeHostFolders(t *testing.T) {
	needSandbox(t)
	t.Run("a host home", func(t *testing.T) {
		home, err := os.MkdirTemp("/home", "gatehouse-e2e-")
		if err != nil {
			t.Skipf("cannot make a home under /home: %v", err)
		}
		t.Cleanup(func() { os.RemoveAll(home) })
		if err := os.WriteFile(filepath.Join(home, ".profile"), []byte("export EDITOR=vi\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		p := oneMistake(t, addArgs("the developer's home, read-only, 'for their dotfiles'", "--ro-bind", home, "/mnt/home"))
		checkGates(t, p, map[string]want{
			"long-lived-secret": {evidence.Pass, ""},
			"host-access":       {evidence.Fail, "the host's " + home + " (a user's home) is visible inside at /mnt/home"},
			"foreign-storage":   {evidence.Pass, ""},
		})
	})
	t.Run("harmless: host CA certificates", func(t *testing.T) {
		if _, err := os.Stat("/etc/ssl/certs"); err != nil {
			t.Skip("no /etc/ssl/certs on this host")
		}
		p := oneMistake(t, addArgs("CA certificates for TLS", "--ro-bind", "/etc/ssl/certs", "/etc/ssl/certs"))
		checkGates(t, p, map[string]want{
			"long-lived-secret": {evidence.Pass, ""},
			"host-access":       {evidence.Pass, "neither the host's / nor a home visible"},
			"foreign-storage":   {evidence.Pass, ""},
		})
	})
}

// The host's / bound in read-only ("--ro-bind / /rootfs", "to read system
// files"): host-access FAILs on the host's / by device:inode, on both
// paths. The same bind also shows, truthfully, what the host holds to
// whoever the sandbox's user is there. On the assume-breach path that is
// host root: the canaries Gatehouse planted under /run/gatehouse and the
// other session's storage are read, so long-lived-secret and
// foreign-storage FAIL too (one mistake, three broken gates: what binding
// the host's / means, not a false FAIL). On the normal path it is an
// unprivileged host uid, which cannot enter those root-only folders: no
// planted canary and no crossing, and no PASS either (a search of the whole
// host cannot be complete; what it may find readable, such as an API key a
// package left world-readable in /etc, is a FAIL).
func TestOneMistakeHostRoot(t *testing.T) {
	needSandbox(t)
	p := oneMistake(t, addArgs("the host's root, read-only, 'to read system files'", "--ro-bind", "/", "/rootfs"))
	checkGatesPaths(t, p, realGates, map[string]want{
		"long-lived-secret": {evidence.Fail, "planted credentials read: "},
		"host-access":       {evidence.Fail, "the host's / (its root file system) is visible inside at /rootfs"},
		"foreign-storage":   {evidence.Fail, "crossing"},
	}, map[string]normalWant{
		"long-lived-secret": {lacks: "planted credentials read"},
		"foreign-storage":   {lacks: "crossing"},
	})
}
