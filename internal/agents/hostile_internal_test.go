package agents

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A hostile tarball is pinned in the lock here (an upstream compromised at
// publication, or a lock updated carelessly): the extraction alone must
// hold. The install runs below base/cache; base also holds a sentinel that
// stands for the host's files. The package folder is four levels below
// base (base/cache/.stage/@scope/pkg), so "../../../.." from it is base.

// ent is one tar entry; names get "package/" in front unless raw.
type ent struct {
	name, link, body string
	typ              byte
	mode             int64
	raw              bool
}

func file(name, body string) ent { return ent{name: name, body: body, typ: tar.TypeReg, mode: 0o644} }
func symlink(name, target string) ent {
	return ent{name: name, link: target, typ: tar.TypeSymlink, mode: 0o777}
}
func folder(name string) ent { return ent{name: name, typ: tar.TypeDir, mode: 0o755} }

func tgz(t *testing.T, entries ...ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		name := e.name
		if !e.raw {
			name = "package/" + name
		}
		hdr := &tar.Header{Name: name, Linkname: e.link, Typeflag: e.typ, Mode: e.mode, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e.body))
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

// host is a test's stand-in for the machine: base with a sentinel file and
// the cache below it.
type host struct{ base, sentinel string }

func newHost(t *testing.T) host {
	base := t.TempDir()
	h := host{base: base, sentinel: filepath.Join(base, "sentinel")}
	if err := os.WriteFile(h.sentinel, []byte("host secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	return h
}

// untouched fails the test unless base holds exactly the sentinel, as it
// was, and an empty cache (or none): nothing written, chmodded or left.
func (h host) untouched(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(h.sentinel)
	fi, serr := os.Lstat(h.sentinel)
	if err != nil || serr != nil || string(b) != "host secret" || fi.Mode() != 0o600 {
		t.Errorf("sentinel outside the install: %q %v %v (mode %v): want it untouched", b, err, serr, fi.Mode())
	}
	var found []string
	filepath.WalkDir(h.base, func(p string, d fs.DirEntry, err error) error { // never follows links
		if p != h.base {
			rel, _ := filepath.Rel(h.base, p)
			found = append(found, rel)
		}
		return nil
	})
	if !slices.Equal(found, []string{"cache", "sentinel"}) && !slices.Equal(found, []string{"sentinel"}) {
		t.Errorf("after the refused install the host holds %q, want only the sentinel and an empty cache", found)
	}
}

func (h host) cache(r *fakeRegistry) Cache {
	return Cache{Dir: filepath.Join(h.base, "cache"), Registry: r.URL, InsecureLoopback: true, lock: r.lock()}
}

func TestAgentsInstallRefusesAHostileTarball(t *testing.T) {
	a := codex()
	bin := file(a.agent.file, "codex") // the binary, so that only the attack can fail the install
	bin.mode = 0o755
	tests := []struct {
		name    string
		entries []ent
		limits  Limits
		want    string
	}{
		{name: "a link to . then a deep ../.. link, then a file through it", want: "passes through the symlink",
			entries: []ent{bin, symlink("x", "."), symlink("x/x/x/x/y", "../../../.."), file("y/pwned", "root")}},
		{name: "a link chain inside on paper that climbs out, then a file through it", want: "passes through the symlink",
			entries: []ent{bin, symlink("a/b/c/d/l", "../../../.."), symlink("m", "a/b/c/d/l/../../../.."), file("m/pwned", "root")}},
		{name: "a link chain inside on paper that climbs out", want: "leads out of the package",
			entries: []ent{bin, symlink("a/b/c/d/l", "../../../.."), symlink("m", "a/b/c/d/l/../../../..")}},
		{name: "a link to the parent folder", want: "leaves the package",
			entries: []ent{bin, symlink("sub/up", "../..")}},
		{name: "an absolute link", want: "leaves the package",
			entries: []ent{bin, symlink("etc", "/etc")}},
		{name: "a link inside, then a file through it", want: "passes through the symlink",
			entries: []ent{bin, folder("vendor/real"), symlink("lib", "vendor/real"), file("lib/evil.js", "x")}},
		{name: "a hard link", want: "hard link",
			entries: []ent{bin, {name: "h", link: "../../../../sentinel", typ: tar.TypeLink}}},
		{name: "a character device", want: "device node",
			entries: []ent{bin, {name: "null", typ: tar.TypeChar, mode: 0o666}}},
		{name: "a block device", want: "device node",
			entries: []ent{bin, {name: "disk", typ: tar.TypeBlock, mode: 0o660}}},
		{name: "a FIFO", want: "FIFO",
			entries: []ent{bin, {name: "fifo", typ: tar.TypeFifo, mode: 0o644}}},
		{name: "a setuid file", want: "setuid",
			entries: []ent{bin, {name: "bin/su", body: "x", typ: tar.TypeReg, mode: 0o4755}}},
		{name: "a setgid folder", want: "setgid",
			entries: []ent{bin, {name: "shared", typ: tar.TypeDir, mode: 0o2775}}},
		{name: "an absolute name", want: "absolute name",
			entries: []ent{bin, {name: "/etc/cron.d/pwned", body: "x", typ: tar.TypeReg, mode: 0o644, raw: true}}},
		{name: "a .. in the name", want: `".." in the name`,
			entries: []ent{bin, {name: "package/../../pwned", body: "x", typ: tar.TypeReg, mode: 0o644, raw: true}}},
		{name: "more entries than the limit", want: "more than 5 entries", limits: Limits{Entries: 5},
			entries: []ent{bin, file("1", ""), file("2", ""), file("3", ""), file("4", ""), file("5", "")}},
		{name: "more bytes than the limit", want: "more than 1000 bytes in all", limits: Limits{Bytes: 1000},
			entries: []ent{bin, file("1", strings.Repeat("x", 600)), file("2", strings.Repeat("x", 600))}},
		{name: "one file past its limit", want: "for one file", limits: Limits{FileSize: 100},
			entries: []ent{bin, file("big", strings.Repeat("x", 200))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHost(t)
			r := newFakeRegistry(t)
			publishCodex(t, r, "codex")
			r.publish(a.Package, a.Version+"-"+platformSuffix(), tgz(t, tt.entries...), nil)
			c := h.cache(r)
			c.Limits = tt.limits
			_, _, err := c.Install(context.Background(), a)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrArchive) {
				t.Errorf("install: %v, want ErrArchive saying %q", err, tt.want)
			}
			h.untouched(t)
		})
	}
}

// Qwen's rg is chmodded after extraction: a link planted in its place must
// not carry the chmod to a file outside.
func TestAgentsInstallChmodsNothingThroughALink(t *testing.T) {
	a := qwenCode()
	h := newHost(t)
	r := newFakeRegistry(t)
	r.publish(a.Package, a.Version, tgz(t, file("cli-entry.js", "// qwen"),
		symlink("a/b/c/d/l", "../../../.."), symlink("m", "a/b/c/d/l/../../../.."),
		symlink(a.agent.exec[0], "../../../m/sentinel")), nil)
	r.add(t, "node", a.runtime.version, map[string]string{"installArchSpecificPackage.js": ""}, nil)
	r.add(t, a.runtime.platform, a.runtime.version, map[string]string{"bin/node*": "node22"}, nil)
	_, _, err := h.cache(r).Install(context.Background(), a)
	if err == nil || !errors.Is(err, ErrArchive) {
		t.Errorf("install: %v, want ErrArchive", err)
	}
	h.untouched(t)
}
