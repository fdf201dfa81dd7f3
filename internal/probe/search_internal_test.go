package probe

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for rel, data := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// A deadline that cuts a search keeps what it found and says partial.
func TestSearchKeepsFindingsWhenTheDeadlineCuts(t *testing.T) {
	root := writeTree(t, map[string]string{"a/nonce": "gha0000000000000001", "b/nonce": "gha0000000000000002"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := newCollector(wire.Tokens, "")
	s := newSearch(ctx, func(p string, st *unix.Stat_t) {
		b, _ := os.ReadFile(p)
		c.values(b, p)
		cancel() // the deadline arrives right after the first file
	})
	err := s.run([]string{root})
	var pe *partialError
	if !errors.As(err, &pe) || classify(err) != wire.OutcomePartial {
		t.Fatalf("run = %v, want a partial error", err)
	}
	if got := c.found(); len(got) != 1 {
		t.Errorf("found %q, want the one value read before the deadline", got)
	}
}

// A read that blocks (a FIFO, a hung file system) costs the rest of the
// search, not what was found before it.
func TestGatherReturnsFindingsWhenAReadBlocks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	c := newCollector(wire.Tokens, "")
	unblock := make(chan struct{})
	defer close(unblock)
	err := gather(ctx, func() error {
		c.values([]byte("gha0000000000000003"), "/first")
		<-unblock
		return nil
	})
	rep := wire.Report{Kind: wire.KindFind}
	err = c.finish(&rep, err)
	if classify(err) != wire.OutcomePartial || !strings.Contains(rep.Excerpt, "gha0000000000000003 /first") {
		t.Errorf("outcome %s, excerpt %q; want partial with the first finding", classify(err), rep.Excerpt)
	}
}

// Folders skipped by rule (system software, the probe's own) are not
// searched, whatever path reaches them, and that does not make it partial.
func TestSearchSkipsFoldersByFileID(t *testing.T) {
	root := writeTree(t, map[string]string{"usr/nonce": "gha0000000000000004", "work/nonce": "gha0000000000000005"})
	id, err := wire.StatID(filepath.Join(root, "usr"))
	if err != nil {
		t.Fatal(err)
	}
	c := newCollector(wire.Tokens, "")
	s := newSearch(context.Background(), func(p string, st *unix.Stat_t) {
		b, _ := os.ReadFile(p)
		c.values(b, p)
	})
	s.skip = map[wire.FileID]string{id: "read-only system software"}
	if err := s.run([]string{root, filepath.Join(root, "nope")}); err != nil {
		t.Fatalf("run = %v", err)
	}
	if got := c.found(); len(got) != 1 || got[0] != "gha0000000000000005" {
		t.Errorf("found %q, want only the value outside the skipped folder", got)
	}
}

func TestSearchOutcomes(t *testing.T) {
	root := writeTree(t, map[string]string{"f": "x"})
	tests := []struct {
		name  string
		roots []string
		want  error
	}{
		{"all absent", []string{filepath.Join(root, "no1"), filepath.Join(root, "no2")}, errAbsent},
		{"one present", []string{filepath.Join(root, "no1"), root}, nil},
		{"a file root", []string{filepath.Join(root, "f")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSearch(context.Background(), func(string, *unix.Stat_t) {})
			if err := s.run(tt.roots); !errors.Is(err, tt.want) {
				t.Errorf("run = %v, want %v", err, tt.want)
			}
		})
	}
}

// Hints are looked for under every mount point, before the mount points.
func TestUnderEachPutsHintsUnderEveryMountPoint(t *testing.T) {
	got := underEach([]string{"/", "/rootfs", "/workspace"}, []string{"/run/gatehouse/lab/s1/host"})
	want := []string{"/run/gatehouse/lab/s1/host", "/rootfs/run/gatehouse/lab/s1/host", "/workspace/run/gatehouse/lab/s1/host"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("underEach = %q, want %q", got, want)
	}
}

func TestParseMountLine(t *testing.T) {
	tests := []struct {
		line string
		want mount
		ok   bool
	}{
		{"391 390 254:0 /usr /usr ro,nosuid,nodev,relatime - ext4 /dev/vda rw", mount{Dev: "254:0", Point: "/usr", Root: "/usr", FSType: "ext4", RO: true, Opts: "ro,nosuid,nodev,relatime"}, true},
		{"405 390 254:0 /tmp /my\\040dir rw,nosuid shared:1 - ext4 /dev/vda rw", mount{Dev: "254:0", Point: "/my dir", Root: "/tmp", FSType: "ext4", Opts: "rw,nosuid"}, true},
		{"garbage", mount{}, false},
	}
	for _, tt := range tests {
		got, ok := parseMountLine(tt.line)
		if ok != tt.ok || got != tt.want {
			t.Errorf("parseMountLine(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

func TestFileIDRoundTrip(t *testing.T) {
	id, err := wire.StatID("/")
	if err != nil {
		t.Fatal(err)
	}
	back, ok := wire.ParseFileID(id.String())
	if !ok || back != id {
		t.Errorf("ParseFileID(%q) = %+v, %v", id.String(), back, ok)
	}
	for _, bad := range []string{"", "1:2", "a:b:c", "1:2:3:4"} {
		if _, ok := wire.ParseFileID(bad); ok {
			t.Errorf("ParseFileID(%q) accepted", bad)
		}
	}
}

// Hints are searched to the end before the mount points start: a huge
// root (a host's /) cannot spend the deadline before them.
func TestSearchFinishesHintsFirst(t *testing.T) {
	hint := writeTree(t, map[string]string{"a/b/c/nonce": "gha0000000000000006"})
	big := writeTree(t, map[string]string{"x": "gha0000000000000007", "y": "gha0000000000000008"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := newCollector(wire.Tokens, "")
	s := newSearch(ctx, func(p string, st *unix.Stat_t) {
		b, _ := os.ReadFile(p)
		c.values(b, p)
		if strings.HasPrefix(p, big) {
			cancel() // the deadline comes during the big root
		}
	})
	s.first = 1
	if err := s.run([]string{hint, big}); classify(err) != wire.OutcomePartial {
		t.Fatalf("run = %v, want partial", err)
	}
	if got := c.found(); len(got) != 2 || got[0] != "gha0000000000000006" {
		t.Errorf("found %q, want the hint's deep value first, then one of the big root's", got)
	}
}
