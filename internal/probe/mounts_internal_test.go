package probe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// A read-only bind of the host's /usr/share at /opt/share, next to the
// read-only /usr it is part of, is the system software the search skips at
// /usr: skipped with its reason, so a search of every mount point finishes
// on a busy machine. Anything the sandbox could write, anything not inside
// the system mount's folder, or a system mount hidden under another mount,
// is searched as before.
func TestSystemCopyIsSkippedByIdentity(t *testing.T) {
	usr := mount{Dev: "254:0", Point: "/usr", Root: "/usr", FSType: "ext4", RO: true}
	share := mount{Dev: "254:0", Point: "/opt/share", Root: "/usr/share", FSType: "ext4", RO: true}
	tmp := mount{Dev: "0:43", Point: "/tmp", Root: "/", FSType: "tmpfs"}
	work := mount{Dev: "254:0", Point: "/workspace", Root: "/run/gatehouse/scratch/p/storage/s1", FSType: "ext4"}
	tests := []struct {
		name string
		ms   []mount
		want string // skipReason of the last mount
	}{
		{"a read-only copy of /usr/share", []mount{usr, tmp, work, share}, "read-only system software (the same folder as /usr/share)"},
		{"the host's root file system shows it at /usr/share", []mount{{Dev: "254:0", Point: "/", Root: "/", RO: true}, share}, "read-only system software (the same folder as /usr/share)"},
		{"writable copy", []mount{usr, func() mount { m := share; m.RO = false; return m }()}, ""},
		{"another file system", []mount{usr, func() mount { m := share; m.Dev = "8:1"; return m }()}, ""},
		{"a folder from outside /usr", []mount{usr, func() mount { m := share; m.Root = "/srv/share"; return m }()}, ""},
		{"a look-alike path, not inside /usr", []mount{usr, func() mount { m := share; m.Root = "/usrx/share"; return m }()}, ""},
		{"the sandbox can write that file system there", []mount{usr, {Dev: "254:0", Point: "/data", Root: "/usr/share/doc"}, share}, ""},
		{"the sandbox can write a folder above it", []mount{usr, {Dev: "254:0", Point: "/data", Root: "/"}, share}, ""},
		{"the system mount is writable", []mount{func() mount { m := usr; m.RO = false; return m }(), share}, ""},
		{"another mount hides it at /usr/share", []mount{usr, {Dev: "0:50", Point: "/usr/share", Root: "/", FSType: "tmpfs", RO: true}, share}, ""},
		{"no device in the table", []mount{{Point: "/usr", Root: "/usr", RO: true}, {Point: "/opt/share", Root: "/usr/share", RO: true}}, ""},
		{"a host folder planted in, read-only", []mount{usr, {Dev: "254:0", Point: "/mnt/host", Root: "/run/gatehouse", RO: true}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.ms[len(tt.ms)-1]
			if got := skipReason(m, tt.ms); got != tt.want {
				t.Errorf("skipReason(%s) = %q, want %q", m.Point, got, tt.want)
			}
			points := searchPoints(tt.ms)
			searched := false
			for _, p := range points {
				searched = searched || p == m.Point
			}
			if searched != (tt.want == "") {
				t.Errorf("searchPoints = %q: %s searched %v, want %v", points, m.Point, searched, tt.want == "")
			}
			notes := strings.Join(skippedMounts(tt.ms), "\n")
			if tt.want != "" && !strings.Contains(notes, "not searched: "+m.Point+": "+tt.want) {
				t.Errorf("skipped mounts %q do not name %s with its reason", notes, m.Point)
			}
		})
	}
}

// A search stopped by its file bound names the root that was too big.
func TestSearchNamesTheRootTooBig(t *testing.T) {
	small := writeTree(t, map[string]string{"a": "x"})
	big := t.TempDir()
	for i := range searchFiles + 5 {
		if err := os.WriteFile(filepath.Join(big, fmt.Sprint(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := newSearch(context.Background(), func(string, *unix.Stat_t) {})
	err := s.run([]string{small, big})
	var pe *partialError
	if !errors.As(err, &pe) {
		t.Fatalf("run = %v, want partial", err)
	}
	if want := fmt.Sprintf("the largest: %s, %d of %d files read were there", big, searchFiles, searchFiles+1); !strings.Contains(err.Error(), want) {
		t.Errorf("partial reason %q does not say %q", err, want)
	}
}

// Notes never crowd out a finding, and one that does not fit is not a
// lost finding (the search stays complete).
func TestNotesDoNotMakeASearchPartial(t *testing.T) {
	c := newCollector(wire.Tokens, "")
	c.values([]byte("gha0000000000000009"), "/workspace/nonce")
	c.note("not searched: /opt/share: read-only system software (the same folder as /usr/share)")
	rep := wire.Report{Kind: wire.KindFind}
	if err := c.finish(&rep, nil); err != nil {
		t.Fatalf("finish = %v, want complete", err)
	}
	if !strings.HasPrefix(rep.Excerpt, "gha0000000000000009 /workspace/nonce\n") || !strings.Contains(rep.Excerpt, "not searched: /opt/share") {
		t.Errorf("excerpt %q", rep.Excerpt)
	}
	c.note(strings.Repeat("x", wire.ExcerptCap(wire.KindFind)))
	if err := c.finish(&rep, nil); err != nil {
		t.Errorf("a note too long for the report made the search %v", err)
	}
}
