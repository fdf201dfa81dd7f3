package hostwrite

import (
	"os"
	"slices"
	"testing"
)

// The host: ext4 at /, the lab's namespace handles (/run/netns is a bind
// of itself, one nsfs handle in it), a tmpfs at /dev/shm, a team's cache
// at /srv/cache.
const hostInfo = `26 1 254:0 / / rw,relatime - ext4 /dev/vda rw
24 23 0:22 / /dev/shm rw,relatime - tmpfs tmpfs rw
60 26 254:0 /run/netns /run/netns rw,relatime shared:5 - ext4 /dev/vda rw
61 60 0:4 net:[4026532300] /run/netns/gh-ab12-s1 rw - nsfs nsfs rw
70 26 254:0 /srv/cache /srv/cache rw,relatime - ext4 /dev/vda rw
`

// A wrapper's session as firejail as root shows it: the host's / itself,
// a private /tmp, the host's /dev/shm, /run/netns with a handle, a team's
// cache bound at another path, a read-only /usr, and a folder with a
// blank in its name.
const sessionInfo = `100 99 254:0 / / rw,relatime - ext4 /dev/vda rw
101 100 0:99 / /tmp rw,nosuid - tmpfs tmpfs rw
102 100 0:22 / /dev/shm rw - tmpfs tmpfs rw
103 100 254:0 /run/netns /run/netns rw - ext4 /dev/vda rw
104 103 0:4 net:[4026532300] /run/netns/gh-ab12-s1 rw - nsfs nsfs rw
105 100 254:0 /srv/cache /var/cache/agent rw - ext4 /dev/vda rw
106 100 254:0 /usr /usr ro,relatime - ext4 /dev/vda rw
107 100 254:0 /srv/my\040dir /data\040x rw - ext4 /dev/vda rw
`

func TestPlaces(t *testing.T) {
	v := View{Host: ParseMountinfo([]byte(hostInfo)), Inside: [][]Mount{ParseMountinfo([]byte(sessionInfo))},
		Binds: []Bind{{Src: "/var/lib/runner/work", Dst: "/work"}}}
	tests := []struct {
		inside string
		want   []Place
	}{
		// The host's / itself: the same path, known from the mount table.
		{"/gatehouse-state", []Place{{"/gatehouse-state", true}}},
		{"/root/.cache/gatehouse/state", []Place{{"/root/.cache/gatehouse/state", true}}},
		// A private tmpfs: only the same path, looked at in case.
		{"/tmp/gatehouse-state", []Place{{"/tmp/gatehouse-state", false}}},
		{"/dev/shm/gatehouse-state", []Place{{"/dev/shm/gatehouse-state", true}}},
		{"/run/netns/gatehouse-state", []Place{{"/run/netns/gatehouse-state", true}}},
		// A team's folder bound elsewhere: its host folder, and the same
		// path in case.
		{"/var/cache/agent/gatehouse-state", []Place{{"/srv/cache/gatehouse-state", true}, {"/var/cache/agent/gatehouse-state", false}}},
		{"/data x/gatehouse-state", []Place{{"/srv/my dir/gatehouse-state", true}, {"/data x/gatehouse-state", false}}},
		// A runtime's bind (gVisor's are not in any mount table).
		{"/work/AGENTS.md", []Place{{"/work/AGENTS.md", true}, {"/var/lib/runner/work/AGENTS.md", true}}},
		// Namespace handles are never a place.
		{"/run/netns/gh-ab12-s1/gatehouse-state", []Place{{"/run/netns/gh-ab12-s1/gatehouse-state", false}}},
		{"relative/path", nil},
		{"/tmp/../etc/passwd", nil},
	}
	for _, tt := range tests {
		got := v.Places(tt.inside)
		slices.SortFunc(got, func(a, b Place) int {
			switch {
			case a.Path < b.Path:
				return -1
			case a.Path > b.Path:
				return 1
			}
			return 0
		})
		slices.SortFunc(tt.want, func(a, b Place) int {
			switch {
			case a.Path < b.Path:
				return -1
			case a.Path > b.Path:
				return 1
			}
			return 0
		})
		if !slices.Equal(got, tt.want) {
			t.Errorf("Places(%q) = %+v, want %+v", tt.inside, got, tt.want)
		}
	}
}

func TestSplitAndWritableFolders(t *testing.T) {
	v := View{Host: ParseMountinfo([]byte(hostInfo)), Inside: [][]Mount{ParseMountinfo([]byte(sessionInfo))}}
	for host, want := range map[string][2]string{
		"/run/netns/gatehouse-state":   {"/run/netns", "gatehouse-state"},
		"/root/.cache/gatehouse/state": {"/", "root/.cache/gatehouse/state"},
		"/dev/shm/x":                   {"/dev/shm", "x"},
	} {
		if u, r := v.Split(host); u != want[0] || r != want[1] {
			t.Errorf("Split(%q) = %q, %q; want %q", host, u, r, want)
		}
	}
	got := v.WritableFolders()
	want := []string{"/", "/tmp", "/dev/shm", "/var/cache/agent", "/data x"}
	if !slices.Equal(got, want) {
		t.Errorf("WritableFolders = %q, want %q (no /run/netns, no handle, no read-only /usr)", got, want)
	}
}

// The harness's own mount table and its own processes' read back from
// /proc: the session's namespaces leave out the harness's own.
func TestSessionMountsLeavesOutOwnNamespace(t *testing.T) {
	host, err := HostMounts()
	if err != nil || len(host) == 0 {
		t.Fatalf("HostMounts: %d mounts, %v", len(host), err)
	}
	ns, err := SessionMounts([]int{os.Getpid()})
	if err != nil || len(ns) != 0 {
		t.Errorf("SessionMounts(self) = %d namespaces, %v; want none (the harness's own) and no error", len(ns), err)
	}
	if _, err := SessionMounts([]int{1 << 30}); err == nil {
		t.Error("no readable process, yet no error")
	}
}
