package steps

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/hostwrite"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/targets"
)

const testNote = "Note for the next session: ghst0123456789abcdef\n"

// Every writing step's places, as the plan alone tells them: a note's
// file, each folder a send writes in (every writable mount point for
// @writable), a receive's socket, both heartbeat files; "~" and "$HOME"
// only the probe knows.
func TestPlannedWrites(t *testing.T) {
	v := &hostwrite.View{Inside: [][]hostwrite.Mount{{
		{Point: "/", FSType: "ext4", RW: true}, {Point: "/tmp", FSType: "tmpfs", RW: true},
		{Point: "/usr", FSType: "ext4"}, {Point: "/run/netns", FSType: "ext4", RW: true},
	}}}
	p := wire.Plan{Canary: "ghc0123456789abcdef", Steps: []wire.Step{
		{ID: "a", Kind: wire.KindStash, Target: "/tmp/gatehouse-state", Payload: testNote},
		{ID: "b", Kind: wire.KindStash, Target: "~/.gatehouse-state", Payload: testNote},
		{ID: "c", Kind: wire.KindSend, Target: "dir:@writable", Payload: "ghc0123456789abcdef"},
		{ID: "d", Kind: wire.KindSend, Target: "dir:$HOME", Payload: "ghc0123456789abcdef"},
		{ID: "e", Kind: wire.KindSend, Target: "dir:/workspace/..", Payload: "ghc0123456789abcdef"},
		{ID: "f", Kind: wire.KindReceive, Target: "unix:/tmp", Payload: "ghc0123456789abcdef"},
		{ID: "g", Kind: wire.KindHeartbeat, Path: "/workspace/.gatehouse-heartbeat"},
		{ID: "h", Kind: wire.KindRead, Target: "/etc/passwd"},
	}}
	xs, content := wire.XSFile("ghc0123456789abcdef", "@writable")
	xsParent, _ := wire.XSFile("ghc0123456789abcdef", "/workspace/..")
	want := []probeWrite{
		{"/tmp/gatehouse-state", hostwrite.File, testNote},
		{"/" + xs, hostwrite.File, content},
		{"/tmp/" + xs, hostwrite.File, content},
		{"/" + xsParent, hostwrite.File, content},
		{"/tmp/" + wire.XSSocket("ghc0123456789abcdef"), hostwrite.Socket, ""},
		{"/workspace/.gatehouse-heartbeat-main", hostwrite.File, wire.BeatLine("ghc0123456789abcdef")},
		{"/workspace/.gatehouse-heartbeat-child", hostwrite.File, wire.BeatLine("ghc0123456789abcdef")},
	}
	if got := planned(p, v); !slices.Equal(got, want) {
		t.Errorf("planned:\n%q\nwant\n%q", got, want)
	}
	reps := []wire.Report{
		{ID: "b", Kind: wire.KindStash, Wrote: []string{"/home/agent/.gatehouse-state"},
			Made: []string{"/home/agent", "/etc"}}, // /etc is above no file it wrote: never taken
		{ID: "d", Kind: wire.KindSend, Wrote: []string{"/home/agent/" + xs}},
		{ID: "f", Kind: wire.KindReceive, Wrote: []string{"/tmp/" + wire.XSSocket("ghc0123456789abcdef")}},
		{ID: "zz", Kind: wire.KindStash, Wrote: []string{"/etc/passwd"}}, // not in the plan
	}
	_, home := wire.XSFile("ghc0123456789abcdef", "$HOME")
	wantLearned := []probeWrite{
		{"/home/agent/.gatehouse-state", hostwrite.File, testNote},
		{"/home/agent", hostwrite.Folder, ""},
		{"/home/agent/" + xs, hostwrite.File, home},
		{"/tmp/" + wire.XSSocket("ghc0123456789abcdef"), hostwrite.Socket, ""},
	}
	if got := learned(p, reps); !slices.Equal(got, wantLearned) {
		t.Errorf("learned:\n%q\nwant\n%q", got, wantLearned)
	}
}

// Docker's read-back binds ("bind SRC -> DST (rw)") map its paths; a
// read-only one or a volume line of another shape does not.
func TestBindsFromInspect(t *testing.T) {
	got := binds(targets.Config{Mounts: []string{
		"bind /srv/cache -> /var/cache/agent (rw)",
		"bind /etc -> /host/etc (ro)",
		"volume gh-tools -> /gatehouse/bin (ro)",
		"bind relative -> /x (rw)",
	}})
	if want := []hostwrite.Bind{{Src: "/srv/cache", Dst: "/var/cache/agent"}}; !slices.Equal(got, want) {
		t.Errorf("binds = %+v, want %+v", got, want)
	}
}

// reusable-state never plans a note in a namespace handle or in the
// host's /run/netns, where the earlier session's mount table lists them.
func TestWritableMountsLeaveNamespaceHandles(t *testing.T) {
	got := writableMounts([]string{
		"/ ext4 rw,relatime",
		"/run/netns ext4 rw,relatime",
		"/run/netns/gh-ab12-s2 nsfs rw",
		"/var/run/netns ext4 rw",
		"/tmp tmpfs rw,nosuid",
	})
	if want := []string{"/", "/tmp"}; !slices.Equal(got, want) {
		t.Errorf("writableMounts = %q, want %q", got, want)
	}
}

// A plan's notes on the host's own folders (the same path inside and out)
// are taken back once the sessions are gone: the run's file removed, a
// team's file given its own bytes back, a link followed nowhere, a
// payload without a run value never noted; then nothing is noted any more.
func TestHostWritesTakenBack(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "CLAUDE.md"), []byte("# the team's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	// A folder something else made during the run, before the plan: the
	// daemon's own (a docker data root's "containers"), never the probe's.
	if err := os.Mkdir(filepath.Join(dir, "theirs"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := newHostWrites()
	r := &runner{effective: map[string]any{}, hw: h}
	s := &scenario{session: "s1", path: targets.PathBreach}
	// The session shares the harness's mounts (firejail as root): its
	// mount table, as read from the host, is the host's.
	hm, err := hostwrite.HostMounts()
	if err != nil {
		t.Fatal(err)
	}
	h.views[s.session] = &hostwrite.View{Host: hm, Inside: [][]hostwrite.Mount{hm}}
	p := wire.Plan{Canary: "ghc0123456789abcdef", Steps: []wire.Step{
		{ID: "new", Kind: wire.KindStash, Target: filepath.Join(dir, "cache", "gatehouse", "state"), Payload: testNote},
		{ID: "team", Kind: wire.KindStash, Target: filepath.Join(dir, "CLAUDE.md"), Payload: testNote},
		{ID: "link", Kind: wire.KindStash, Target: filepath.Join(dir, "link"), Payload: testNote},
		{ID: "plain", Kind: wire.KindStash, Target: filepath.Join(dir, "plain"), Payload: "no value of the run in it\n"},
		{ID: "below", Kind: wire.KindStash, Target: filepath.Join(dir, "theirs", "sub", "state"), Payload: testNote},
	}}
	sent := h.before(t.Context(), r, s, p)
	// What the probe does through a sandbox that shows it dir.
	appendTo := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(s)
		f.Close()
	}
	for _, st := range p.Steps {
		appendTo(st.Target, st.Payload)
	}
	h.after(t.Context(), r, s, p, nil, sent)
	if len(h.writes) == 0 {
		t.Fatal("nothing noted")
	}
	for _, w := range h.writes {
		if strings.HasSuffix(w.Rel, "plain") {
			t.Errorf("a payload without a value of the run was noted: %+v", w)
		}
	}
	hw := h.undo()
	if hw.Left != 0 {
		t.Errorf("left: %q", hw.LeftPaths)
	}
	if _, err := os.Lstat(filepath.Join(dir, "cache")); !os.IsNotExist(err) {
		t.Errorf("the note's file and the folders it made are still there: %v (removed %q)", err, hw.RemovedPaths)
	}
	if _, err := os.Lstat(filepath.Join(dir, "theirs", "sub")); !os.IsNotExist(err) {
		t.Errorf("the folder the note made in someone else's is still there: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "theirs")); err != nil {
		t.Errorf("a folder made before the plan was removed: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "CLAUDE.md")); string(b) != "# the team's\n" {
		t.Errorf("the team's file holds %q", b)
	}
	if b, _ := os.ReadFile(secret); string(b) != "key\n"+testNote {
		t.Errorf("the file behind a link was edited: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "plain")); string(b) != "no value of the run in it\n" {
		t.Errorf("a file without a value of the run was touched: %q", b)
	}
	if hw.Removed < 2 {
		t.Errorf("removed %d, want at least the note and the team's file: %q", hw.Removed, hw.RemovedPaths)
	}
	if len(h.noted) != 0 {
		t.Errorf("ledger notes not released: %d", len(h.noted))
	}

	// A session whose mount tables cannot be read says so.
	other := &scenario{session: "s2", path: targets.PathBreach}
	h.view(t.Context(), r, other)
	if len(other.findings) == 0 || !strings.Contains(other.findings[0], "only the same paths on the host") {
		t.Errorf("findings %q, want the unread mount tables named", other.findings)
	}
}

// What cannot be taken back is counted, named with why, and stays noted
// (on the ledger, for lab down to try again).
func TestHostWritesLeftoverCounted(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "gatehouse-state")
	h := newHostWrites()
	r := &runner{effective: map[string]any{}, hw: h}
	s := &scenario{session: "s1", path: targets.PathBreach}
	hm, err := hostwrite.HostMounts()
	if err != nil {
		t.Fatal(err)
	}
	h.views[s.session] = &hostwrite.View{Host: hm, Inside: [][]hostwrite.Mount{hm}}
	p := wire.Plan{Steps: []wire.Step{{ID: "a", Kind: wire.KindStash, Target: big, Payload: testNote}}}
	sent := h.before(t.Context(), r, s, p)
	// The run's note in a file too large to edit.
	if err := os.WriteFile(big, []byte(testNote+strings.Repeat("x", hostwrite.MaxFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	h.after(t.Context(), r, s, p, nil, sent)
	hw := h.undo()
	if hw.Left != 1 || len(hw.LeftPaths) != 1 || !strings.HasPrefix(hw.LeftPaths[0], big+": ") {
		t.Errorf("left %d %q, want %s named with why", hw.Left, hw.LeftPaths, big)
	}
	if len(h.noted) != 1 {
		t.Errorf("%d places still noted, want the one left", len(h.noted))
	}
	for _, rels := range h.noted {
		for _, rel := range rels {
			rel() // this test's own ledger notes
		}
	}
}
