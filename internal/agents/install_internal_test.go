package agents

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testCache installs from r (plain http on loopback, said so) with a lock
// pinning what r serves when it is called.
func testCache(t *testing.T, r *fakeRegistry) Cache {
	return Cache{Dir: filepath.Join(t.TempDir(), "agents"), Registry: r.URL, InsecureLoopback: true, lock: r.lock()}
}

func TestAgentsInstallFromRegistry(t *testing.T) {
	r := newFakeRegistry(t)
	a := publishCodex(t, r, "#!fake codex\n")
	c := testCache(t, r)

	in, fetched, err := c.Install(context.Background(), a)
	if err != nil || !fetched {
		t.Fatalf("first install: fetched=%v err=%v", fetched, err)
	}
	sum := sha256.Sum256([]byte("#!fake codex\n"))
	if in.Binary.SHA256 != hex.EncodeToString(sum[:]) || in.Dir != c.Folder(a) {
		t.Errorf("install %+v: want the binary's sha256 %x in %s", in, sum, c.Folder(a))
	}
	if len(in.Tarballs) != 1 || in.Tarballs[0].Pin != "@openai/codex@0.171.0" || !strings.HasSuffix(in.Tarballs[0].Version, "-"+platformSuffix()) {
		t.Errorf("manifest tarballs %+v: want the platform package fetched for the pin", in.Tarballs)
	}
	fi, err := os.Stat(filepath.Join(in.Dir, filepath.FromSlash(in.Binary.Path)))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("binary: %v, mode %v: want it executable by everyone", err, fi.Mode())
	}
	entries, _ := os.ReadDir(c.Dir)
	if len(entries) != 1 {
		t.Errorf("cache holds %d entries, want only the install folder (no staging left)", len(entries))
	}

	before := r.hits.Load()
	again, fetched, err := c.Install(context.Background(), a)
	if err != nil || fetched || r.hits.Load() != before || again.Binary != in.Binary {
		t.Errorf("second install: fetched=%v err=%v, %d registry requests: want a no-op", fetched, err, r.hits.Load()-before)
	}
}

func TestAgentsInstallRefusesWhatDoesNotMatch(t *testing.T) {
	tests := []struct {
		name  string
		fault func(doc map[string]any)
		files map[string]string // the platform package's files instead of a good binary
		want  string
	}{
		{name: "integrity mismatch", want: "refusing it",
			fault: func(d map[string]any) {
				d["dist"].(map[string]any)["integrity"] = "sha512-" + strings.Repeat("A", 86) + "=="
			}},
		{name: "tarball on another host", want: "is not on",
			fault: func(d map[string]any) {
				d["dist"].(map[string]any)["tarball"] = "https://elsewhere.invalid/x.tgz"
			}},
		{name: "metadata of another version", want: "pinned version",
			fault: func(d map[string]any) { d["version"] = "9.9.9" }},
		{name: "entry leaving the package", want: "leaves the package",
			files: map[string]string{"../../evil": "x"}},
		{name: "symlink leaving the package", want: "leaves the package",
			files: map[string]string{"->vendor/link:../../../../etc/passwd": ""}},
		{name: "no binary in the package", want: "has no",
			files: map[string]string{"README.md": "nothing here"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newFakeRegistry(t)
			a := publishCodex(t, r, "bin")
			if tt.files != nil {
				r.add(t, a.Package, a.Version+"-"+platformSuffix(), tt.files, nil)
			}
			r.fault = tt.fault
			c := testCache(t, r)
			_, _, err := c.Install(context.Background(), a)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("install: %v, want an error saying %q", err, tt.want)
			}
			entries, _ := os.ReadDir(c.Dir)
			if len(entries) != 0 {
				t.Errorf("the refused install left %d entries in the cache", len(entries))
			}
		})
	}
}

func TestAgentsInstallOfflineAndNothingCached(t *testing.T) {
	r := newFakeRegistry(t)
	a := publishCodex(t, r, "bin")
	c := testCache(t, r)
	r.Close() // the registry is gone
	_, _, err := c.Install(context.Background(), a)
	if !errors.Is(err, ErrRegistry) {
		t.Fatalf("install with no registry: %v, want ErrRegistry (the CLI exits 2 on it)", err)
	}
	if _, err := c.Open(a); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("open: %v, want ErrNotInstalled", err)
	}
}

// A binary changed after install is not the pinned agent: Open says so and
// Install fetches it again.
func TestAgentsInstallNoticesATamperedBinary(t *testing.T) {
	r := newFakeRegistry(t)
	a := publishCodex(t, r, "good")
	c := testCache(t, r)
	in, _, err := c.Install(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(in.Dir, filepath.FromSlash(in.Binary.Path))
	if err := os.WriteFile(bin, []byte("evil"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Open(a); !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "changed since install") {
		t.Fatalf("open after tampering: %v", err)
	}
	if _, fetched, err := c.Install(context.Background(), a); err != nil || !fetched {
		t.Fatalf("reinstall: fetched=%v err=%v", fetched, err)
	}
	if b, _ := os.ReadFile(bin); string(b) != "good" {
		t.Errorf("binary after reinstall is %q", b)
	}
}

// Qwen is two packages: the agent and Node 22 (a platform package named by
// convention), and rg must come out executable.
func TestAgentsInstallWithARuntime(t *testing.T) {
	r := newFakeRegistry(t)
	a := qwenCode()
	r.add(t, a.Package, a.Version, map[string]string{"cli-entry.js": "// qwen", a.agent.exec[0]: "rg"}, nil)
	r.add(t, "node", a.runtime.version, map[string]string{"installArchSpecificPackage.js": ""}, nil)
	r.add(t, a.runtime.platform, a.runtime.version, map[string]string{"bin/node*": "node22"}, nil)
	c := testCache(t, r)
	in, _, err := c.Install(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	if in.Runtime == nil || in.Runtime.Path != a.runtime.platform+"/bin/node" || len(in.Tarballs) != 2 {
		t.Fatalf("install %+v: want node from its platform package as the runtime", in)
	}
	fi, err := os.Stat(filepath.Join(in.Dir, a.Package, a.agent.exec[0]))
	if err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("rg: %v %v, want executable", err, fi.Mode())
	}
}
