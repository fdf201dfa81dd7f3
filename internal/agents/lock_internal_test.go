package agents

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// dialRecorder is a client that dials loopback only and records every
// other address it was asked for: a test of the https rule sends nothing
// off the machine even when the rule is broken.
type dialRecorder struct {
	mu     sync.Mutex
	others []string
}

func (d *dialRecorder) client() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		d.others = append(d.others, addr)
		return nil, errors.New("test: no dialing off loopback")
	}}}
}

// A registry or mirror can serve anything: only what lock.json pins is
// installed, from https (or loopback said so), and nothing is left.
func TestAgentsInstallRefusesWhatTheLockDoesNotPin(t *testing.T) {
	a := codex()
	plat := a.Package + "/" + a.Version + "-" + platformSuffix()
	tests := []struct {
		name string
		// mirror changes what the registry serves after the lock was made;
		// cache adjusts the install.
		mirror func(t *testing.T, r *fakeRegistry)
		cache  func(c *Cache, r *fakeRegistry, d *dialRecorder)
		want   string
		is     error
	}{
		{name: "a mirror serves another tarball under the pinned version", want: "lock.json pins", is: ErrUnpinned,
			mirror: func(t *testing.T, r *fakeRegistry) {
				r.add(t, a.Package, a.Version+"-"+platformSuffix(), map[string]string{a.agent.file + "*": "evil"}, nil)
			}},
		{name: "the metadata says the pinned integrity, the tarball is another", want: "refusing it",
			mirror: func(t *testing.T, r *fakeRegistry) {
				url := r.docs[plat]["dist"].(map[string]any)["tarball"].(string)
				r.tgz[strings.TrimPrefix(url, r.URL)] = tarball(t, map[string]string{a.agent.file + "*": "evil"})
			}},
		{name: "the metadata aliases another platform package", want: "lock.json pins", is: ErrUnpinned,
			mirror: func(t *testing.T, r *fakeRegistry) {
				r.add(t, a.Package, "6.6.6-evil", map[string]string{a.agent.file + "*": "evil"}, nil)
				r.fault = func(d map[string]any) { // the wrapper's document, its pinned integrity kept
					if d["version"] == a.Version {
						d["optionalDependencies"] = map[string]any{a.agent.platform: "npm:" + a.Package + "@6.6.6-evil"}
					}
				}
			}},
		{name: "a package the lock does not list", want: "is not in lock.json", is: ErrUnpinned,
			cache: func(c *Cache, r *fakeRegistry, d *dialRecorder) {
				delete(c.lock.Packages, a.Package+"@"+a.Version+"-"+platformSuffix())
			}},
		{name: "a plain http registry off loopback", want: "only https",
			cache: func(c *Cache, r *fakeRegistry, d *dialRecorder) {
				c.Registry, c.Client = "http://203.0.113.7", d.client()
			}},
		{name: "a plain http registry on loopback, not said so", want: "INSECURE_LOOPBACK",
			cache: func(c *Cache, r *fakeRegistry, d *dialRecorder) { c.InsecureLoopback = false }},
		{name: "a registry that is not http at all", want: "only https",
			cache: func(c *Cache, r *fakeRegistry, d *dialRecorder) { c.Registry = "file:///etc" }},
		{name: "a redirect to plain http off loopback", want: "redirect to http://203.0.113.9",
			mirror: func(t *testing.T, r *fakeRegistry) {
				url := r.docs[plat]["dist"].(map[string]any)["tarball"].(string)
				r.redirect = map[string]string{strings.TrimPrefix(url, r.URL): "http://203.0.113.9/codex.tgz"}
			},
			cache: func(c *Cache, r *fakeRegistry, d *dialRecorder) { c.Client = d.client() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHost(t)
			r := newFakeRegistry(t)
			publishCodex(t, r, "good")
			c := h.cache(r) // the lock pins what r serves now
			if tt.mirror != nil {
				tt.mirror(t, r)
			}
			d := &dialRecorder{}
			if tt.cache != nil {
				tt.cache(&c, r, d)
			}
			before := r.hits.Load()
			_, _, err := c.Install(context.Background(), a)
			if err == nil || !strings.Contains(err.Error(), tt.want) || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Errorf("install: %v, want an error saying %q", err, tt.want)
			}
			if len(d.others) > 0 {
				t.Errorf("the client was sent off loopback to %v", d.others)
			}
			if !c.InsecureLoopback && r.hits.Load() != before {
				t.Errorf("%d requests reached the plain http registry", r.hits.Load()-before)
			}
			h.untouched(t)
		})
	}
}

// The cache is held against the lock too: an install whose manifest names
// another integrity than the lock in use is not the pinned install.
func TestAgentsOpenHoldsTheInstallAgainstTheLock(t *testing.T) {
	r := newFakeRegistry(t)
	a := publishCodex(t, r, "good")
	c := testCache(t, r)
	if _, _, err := c.Install(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Open(a); err != nil {
		t.Fatalf("open with the lock it was installed under: %v", err)
	}
	id := a.Package + "@" + a.Version + "-" + platformSuffix()
	c.lock.Packages[id] = Locked{Integrity: "sha512-" + strings.Repeat("B", 86) + "=="}
	if _, err := c.Open(a); !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "lock.json pins") {
		t.Errorf("open under a lock pinning another integrity: %v, want not installed, saying so", err)
	}
}

// The lock.json in the repository covers every pin on every platform it
// names, and holds nothing else.
func TestAgentsLockCoversEveryPin(t *testing.T) {
	l, err := EmbeddedLock()
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, a := range Pinned() {
		for _, p := range a.parts() {
			used[p.pin()] = true
			if p.platform == "" {
				if _, err := l.get(p.pin()); err != nil {
					t.Errorf("%s: %v", a.Name, err)
				}
				continue
			}
			for _, plat := range LockPlatforms {
				q := p
				q.platform = strings.TrimSuffix(p.platform, platformSuffix()) + plat
				name, version, err := l.target(q)
				if err != nil {
					t.Errorf("%s on %s: %v", a.Name, plat, err)
				}
				used[name+"@"+version] = true
			}
		}
	}
	for id := range l.Packages {
		if !used[id] {
			t.Errorf("lock.json pins %s, which no adapter uses", id)
		}
	}
}

func TestAgentsMakeLock(t *testing.T) {
	r := newFakeRegistry(t)
	a := codex()
	optional := map[string]string{}
	for _, plat := range LockPlatforms {
		optional[a.Package+"-"+plat] = "npm:" + a.Package + "@" + a.Version + "-" + plat
		r.add(t, a.Package, a.Version+"-"+plat, map[string]string{"bin": plat}, nil)
	}
	optional[a.Package+"-darwin-arm64"] = "npm:" + a.Package + "@" + a.Version + "-darwin-arm64"
	r.add(t, a.Package, a.Version, map[string]string{"bin/codex.js": ""}, optional)
	c := testCache(t, r)

	l, err := c.MakeLock(context.Background(), []Adapter{a})
	if err != nil {
		t.Fatal(err)
	}
	want := r.lock()
	delete(want.Packages[a.Package+"@"+a.Version].Optional, a.Package+"-darwin-arm64") // not a locked platform
	if got, w := string(l.JSON()), string(want.JSON()); got != w {
		t.Errorf("lock:\n%s\nwant:\n%s", got, w)
	}
	if _, err := ParseLock(l.JSON()); err != nil {
		t.Errorf("the lock does not read back: %v", err)
	}

	older := *r.lock()
	older.Packages = map[string]Locked{"gone@1.0.0": {Integrity: "sha512-x"}}
	for id, e := range l.Packages {
		older.Packages[id] = e
	}
	added, removed, err := older.Changes(l)
	if err != nil || len(added) != 0 || len(removed) != 1 || removed[0] != "gone@1.0.0" {
		t.Errorf("changes: +%v -%v %v, want only gone@1.0.0 removed", added, removed, err)
	}
	id := a.Package + "@" + a.Version + "-linux-x64"
	older.Packages[id] = Locked{Integrity: "sha512-older"}
	if _, _, err := older.Changes(l); !errors.Is(err, ErrUnpinned) || !strings.Contains(err.Error(), id) {
		t.Errorf("a pinned version with another integrity: %v, want it refused by name", err)
	}
}
