package probe

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// The folders a "dir:" channel names: $HOME and $UID expanded, the parent
// of where a folder really is, and the writable mounts without kernel
// state or the probe's own files.
func TestDirsOf(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	real := filepath.Join(t.TempDir(), "sessions", "s1")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "workspace")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"$HOME":          home,
		"/run/user/$UID": "/run/user/" + strconv.Itoa(os.Getuid()),
		link + "/..":     filepath.Dir(real),
		"/workspace/..":  "/",
		"/var/tmp":       "/var/tmp",
	} {
		got, err := dirsOf(in)
		if err != nil || len(got) != 1 || got[0] != want {
			t.Errorf("dirsOf(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for p, want := range map[string]bool{
		"/dev/shm": true, "/dev/shm/x": true, "/tmp": true, "/": true, "/var/tmp": true,
		"/dev": false, "/dev/mqueue": false, "/proc": false, "/proc/sys": false, "/sys/fs/cgroup": false,
		"/gatehouse": false, "/gatehouse/bin": false, "/gatehousex": true,
		"/run/netns": false, "/run/netns/gh-ab12-s1": false, "/var/run/netns": false, "/run": true, "/run/netnsx": true,
	} {
		if writableCandidate(p) != want {
			t.Errorf("writableCandidate(%q) = %v, want %v", p, !want, want)
		}
	}
	ws, err := dirsOf("@writable")
	if err != nil {
		t.Fatalf("@writable: %v", err)
	}
	for _, w := range ws {
		if !writableCandidate(w) {
			t.Errorf("@writable lists %s", w)
		}
	}
}

// A read-only bind of the host's own /usr/share at /usr/share is system
// software like /usr; a folder from elsewhere bound read-only below /usr,
// or a writable one, is searched like any other mount.
func TestSystemMount(t *testing.T) {
	for _, tt := range []struct {
		m    mount
		want bool
	}{
		{mount{Point: "/usr", Root: "/usr", RO: true}, true},
		{mount{Point: "/usr/share", Root: "/usr/share", RO: true}, true},
		{mount{Point: "/usr/share", Root: "/usr/share"}, false},
		{mount{Point: "/usr/share/home", Root: "/home", RO: true}, false},
		{mount{Point: "/usrx", Root: "/usrx", RO: true}, false},
		{mount{Point: "/data", Root: "/data", RO: true}, false},
	} {
		if got := systemMount(tt.m); got != tt.want {
			t.Errorf("systemMount(%+v) = %v, want %v", tt.m, got, tt.want)
		}
	}
	if got := searchPoints([]mount{{Point: "/usr/share", Root: "/usr/share", RO: true}, {Point: "/data", Root: "/x", RO: true}}); len(got) != 1 || got[0] != "/data" {
		t.Errorf("searchPoints = %q, want only /data", got)
	}
}
